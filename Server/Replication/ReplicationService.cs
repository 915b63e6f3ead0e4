using RavenLite.Server.Databases;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Replication;

/// <summary>
/// A database's replication (docs/replication.md): its configuration (connection strings, external replication tasks),
/// one <see cref="ReplicationSender"/> per enabled task, what it knows of the sources replicating into it, and write
/// assurance — waiting until enough destinations acknowledged an etag.
/// </summary>
public sealed class ReplicationService : IDisposable
{
    private readonly Database _db;
    private readonly ILogger _logger;
    private readonly object _lock = new();
    private readonly Dictionary<long, ReplicationSender> _senders = [];
    private readonly Dictionary<string, ReplicationSender> _groupSenders = new(StringComparer.Ordinal); // by the member's tag
    private readonly Dictionary<string, IncomingReplication> _incoming = new(StringComparer.Ordinal);
    private readonly SemaphoreSlim _changes = new(1, 1);
    private TaskCompletionSource _acknowledged = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private bool _disposed;

    private readonly IReplicationConnector _connector;

    internal ReplicationService(Database db, IReplicationConnector connector, ILogger logger)
    {
        _db = db;
        _connector = connector;
        _logger = logger;
        using (var tx = db.Environment.ReadTransaction())
        {
            Configuration = ReplicationConfiguration.Read(tx);
            Solver = ConflictSolver.Read(tx);
        }
        db.Ownership.Changed += Reconcile;
        Reconcile();
    }

    /// <summary>How concurrent versions are settled (as last stored).</summary>
    public ConflictSolver Solver { get; private set; }

    /// <summary>Stores <paramref name="solver"/> (durable when this returns); versions received from now on are settled by it.</summary>
    public async Task<long> SetSolverAsync(ConflictSolver solver)
    {
        ArgumentNullException.ThrowIfNull(solver);
        var command = new DelegateCommand<long>(ctx =>
        {
            Documents.DocumentsStorage.WriteState(ctx.Transaction, ConflictSolver.StateKey, solver.Write);
            return CompareExchange.CompareExchangeStore.NextIndex(ctx.Transaction);
        });
        await _db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        Solver = solver;
        return command.Result;
    }

    /// <summary>The configuration as last stored.</summary>
    public ReplicationConfiguration Configuration { get; private set; }

    /// <summary>The senders of the enabled tasks.</summary>
    internal IReadOnlyList<ReplicationSender> Senders
    {
        get
        {
            lock (_lock)
                return [.. _senders.Values];
        }
    }

    /// <summary>The senders to the other members of this database's group (docs/cluster.md "Database groups").</summary>
    internal IReadOnlyList<ReplicationSender> GroupSenders
    {
        get
        {
            lock (_lock)
                return [.. _groupSenders.Values];
        }
    }

    /// <summary>
    /// The other members of this database's group (tag → URL): a sender to each, replicating as an external task does
    /// but not listed among the tasks; senders of members no longer named stop.
    /// </summary>
    public void SetGroupMembers(IReadOnlyDictionary<string, string> others)
    {
        ArgumentNullException.ThrowIfNull(others);
        var stopped = new List<ReplicationSender>();
        lock (_lock)
        {
            if (_disposed)
                return;
            foreach (var (tag, sender) in _groupSenders.ToList())
            {
                if (!others.TryGetValue(tag, out string? url) || sender.Destination.TopologyDiscoveryUrls[0] != url)
                {
                    _groupSenders.Remove(tag);
                    stopped.Add(sender);
                }
            }
            foreach (var (tag, url) in others)
            {
                if (_groupSenders.ContainsKey(tag))
                    continue;
                var task = new ExternalReplicationTask(0, $"Group replication to {tag}", "", Disabled: false, TimeSpan.Zero);
                _groupSenders[tag] = new ReplicationSender(_db, task, new RavenConnectionString($"group-{tag}", _db.Name, [url]), _connector, _logger, OnAcknowledged);
            }
        }
        foreach (var s in stopped)
            s.Dispose();
    }

    /// <summary>Whether group node <paramref name="tag"/> has acknowledged everything this instance holds (false when this instance does not feed it).</summary>
    public bool CaughtUp(string tag)
    {
        ReplicationSender? sender;
        lock (_lock)
            sender = _groupSenders.GetValueOrDefault(tag);
        if (sender == null)
            return false;
        using var tx = _db.Environment.ReadTransaction();
        return sender.LastAcknowledgedEtag >= Documents.DocumentsStorage.LastEtag(tx);
    }

    /// <summary>The sources that have replicated into this database since the server started.</summary>
    public IReadOnlyList<IncomingReplication> IncomingSources
    {
        get
        {
            lock (_lock)
                return [.. _incoming.Values];
        }
    }

    /// <summary>Adds or replaces a connection string (durable when this returns); the tasks using it reconnect.</summary>
    public Task<long> PutConnectionStringAsync(RavenConnectionString connectionString) =>
        ChangeAsync(c => (c.With(connectionString), 0));

    /// <summary>Removes a connection string; 400 while a task uses it, false when there is none by that name.</summary>
    public async Task<bool> DeleteConnectionStringAsync(string name)
    {
        bool found = false;
        await ChangeAsync(c =>
        {
            found = CheckDeletable(c, name);
            var strings = new Dictionary<string, RavenConnectionString>(c.ConnectionStrings, StringComparer.OrdinalIgnoreCase);
            strings.Remove(name);
            return (c with { ConnectionStrings = strings }, 0);
        }).ConfigureAwait(false);
        return found;
    }

    /// <summary>
    /// Adds a task (TaskId 0) or replaces one; returns its id: <paramref name="newId"/> when it is above 0 (the Raft index
    /// of the change, the same on every member of a group), else the database's next index.
    /// </summary>
    public Task<long> PutTaskAsync(ExternalReplicationTask task, long newId) => ChangeAsync(c =>
    {
        Check(c, task);
        return (c, task.TaskId);
    }, task, newId);

    /// <summary>400 when the task's connection string is missing, 404 when it names a task id that does not exist.</summary>
    public void Check(ExternalReplicationTask task) => Check(Configuration, task);

    private void Check(ReplicationConfiguration c, ExternalReplicationTask task)
    {
        if (!c.ConnectionStrings.ContainsKey(task.ConnectionStringName))
            throw new BadRequestException($"There is no connection string named '{task.ConnectionStringName}'; put it first (PUT /databases/{_db.Name}/admin/connection-strings).");
        if (task.TaskId != 0 && c.Tasks.All(t => t.TaskId != task.TaskId))
            throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no replication task {task.TaskId} in database '{_db.Name}'.");
    }

    /// <summary>Deletes a task; false when there is none with that id.</summary>
    public async Task<bool> DeleteTaskAsync(long taskId)
    {
        bool found = false;
        await ChangeAsync(c =>
        {
            found = c.Tasks.Any(t => t.TaskId == taskId);
            return (c with { Tasks = [.. c.Tasks.Where(t => t.TaskId != taskId)] }, taskId);
        }).ConfigureAwait(false);
        return found;
    }

    /// <summary>Enables or disables a task; false when there is none with that id.</summary>
    public async Task<bool> SetDisabledAsync(long taskId, bool disabled)
    {
        bool found = false;
        await ChangeAsync(c =>
        {
            var task = c.Tasks.FirstOrDefault(t => t.TaskId == taskId);
            found = task != null;
            return (task == null ? c : c.With(task with { Disabled = disabled }), taskId);
        }).ConfigureAwait(false);
        return found;
    }

    /// <summary>True when connection string <paramref name="name"/> exists; 400 while a task uses it.</summary>
    public bool CheckDeletable(string name) => CheckDeletable(Configuration, name);

    private static bool CheckDeletable(ReplicationConfiguration c, string name)
    {
        if (c.Tasks.FirstOrDefault(t => t.ConnectionStringName.Equals(name, StringComparison.OrdinalIgnoreCase)) is { } user)
            throw new BadRequestException($"Connection string '{name}' is used by replication task '{user.Name}' ({user.TaskId}); delete the task first.");
        return c.ConnectionStrings.ContainsKey(name);
    }

    /// <summary>
    /// Applies <paramref name="change"/> to the configuration in a merged write (with <paramref name="newTask"/>, given
    /// <paramref name="newId"/> or else the next index as its id when it has none), then starts and stops senders to match.
    /// </summary>
    private async Task<long> ChangeAsync(Func<ReplicationConfiguration, (ReplicationConfiguration, long)> change, ExternalReplicationTask? newTask = null, long newId = 0)
    {
        await _changes.WaitAsync().ConfigureAwait(false);
        try
        {
            ReplicationConfiguration? next = null;
            var command = new DelegateCommand<long>(ctx =>
            {
                var (changed, id) = change(ReplicationConfiguration.Read(ctx.Transaction));
                if (newTask != null)
                {
                    id = newTask.TaskId != 0 ? newTask.TaskId : newId > 0 ? newId : CompareExchange.CompareExchangeStore.NextIndex(ctx.Transaction);
                    string name = newTask.Name.Length > 0 ? newTask.Name : $"External Replication #{id.ToString(CultureInfo.InvariantCulture)}";
                    changed = changed.With(newTask with { TaskId = id, Name = name });
                }
                changed.Write(ctx.Transaction);
                next = changed;
                return id;
            });
            await _db.Merger.EnqueueAsync(command).ConfigureAwait(false);
            Configuration = next!;
            Reconcile();
            return command.Result;
        }
        finally
        {
            _changes.Release();
        }
    }

    /// <summary>
    /// Starts a sender for each enabled task this node runs (<see cref="Database.Ownership"/>) without one, and stops
    /// those of tasks deleted, disabled, changed or moved to another member.
    /// </summary>
    private void Reconcile()
    {
        var stopped = new List<ReplicationSender>();
        lock (_lock)
        {
            if (_disposed)
                return;
            var config = Configuration;
            foreach (var (id, sender) in _senders.ToList())
            {
                var task = config.Tasks.FirstOrDefault(t => t.TaskId == id);
                if (task == null || task.Disabled || task != sender.Task || !_db.Ownership.Owns(task.TaskId, task.MentorNode)
                    || !config.ConnectionStrings.TryGetValue(task.ConnectionStringName, out var cs) || cs != sender.Destination)
                {
                    _senders.Remove(id);
                    stopped.Add(sender);
                }
            }
            foreach (var task in config.Tasks)
                if (!task.Disabled && !_senders.ContainsKey(task.TaskId) && _db.Ownership.Owns(task.TaskId, task.MentorNode)
                    && config.ConnectionStrings.TryGetValue(task.ConnectionStringName, out var cs))
                    _senders[task.TaskId] = new ReplicationSender(_db, task, cs, _connector, _logger, OnAcknowledged);
        }
        foreach (var s in stopped)
            s.Dispose();
    }

    /// <summary>The database committed writes: the senders read on.</summary>
    internal void NotifyWrites()
    {
        lock (_lock)
        {
            foreach (var s in _senders.Values)
                s.Notify();
            foreach (var s in _groupSenders.Values)
                s.Notify();
        }
    }

    private void OnAcknowledged() => Interlocked.Exchange(ref _acknowledged, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();

    /// <summary>The state of source <paramref name="sourceDatabaseId"/> as it connects (one per source, kept across its reconnections).</summary>
    internal IncomingReplication Incoming(string sourceDatabaseId, string name, string url)
    {
        lock (_lock)
        {
            if (_incoming.TryGetValue(sourceDatabaseId, out var known))
            {
                known.Reconnected();
                return known;
            }
            var created = new IncomingReplication(sourceDatabaseId, name, url);
            _incoming[sourceDatabaseId] = created;
            return created;
        }
    }

    /// <summary>
    /// Write assurance: waits until <paramref name="replicas"/> destinations (0: a majority of them) have acknowledged
    /// <paramref name="etag"/>, or <paramref name="timeout"/> passes; returns how many had.
    /// </summary>
    public async Task<(int Confirmed, int Needed)> WaitForReplicasAsync(long etag, int replicas, TimeSpan timeout, CancellationToken cancellation)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (true)
        {
            var signal = Volatile.Read(ref _acknowledged).Task;
            var senders = Senders.Concat(GroupSenders).ToList(); // the group's members count as replicas, as in RavenDB
            int needed = replicas > 0 ? replicas : senders.Count / 2 + 1;
            int confirmed = senders.Count(s => s.LastAcknowledgedEtag >= etag);
            var left = deadline - DateTime.UtcNow;
            if (confirmed >= needed || left <= TimeSpan.Zero)
                return (confirmed, needed);
            try
            {
                await signal.WaitAsync(left, cancellation).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
            }
        }
    }

    public void Dispose()
    {
        List<ReplicationSender> senders;
        lock (_lock)
        {
            _disposed = true;
            senders = [.. _senders.Values, .. _groupSenders.Values];
            _senders.Clear();
            _groupSenders.Clear();
        }
        foreach (var s in senders)
            s.Dispose();
        _changes.Dispose();
    }
}
