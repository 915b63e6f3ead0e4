using RavenLite.Server.Databases;
using RavenLite.Server.Replication;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Etl;

/// <summary>
/// A database's ETL (docs/etl.md): its configuration (SQL connection strings, Raven and SQL ETL tasks), one
/// <see cref="EtlProcess"/> per enabled transformation of each enabled task this node runs, and the changes to them —
/// all applied as record changes (<see cref="OngoingTaskChanges"/>), so every member of a group holds the same tasks.
/// </summary>
public sealed class EtlService : IDisposable
{
    private readonly Database _db;
    private readonly IReplicationConnector _connector;
    private readonly ILogger _logger;
    private readonly object _lock = new();
    private readonly SemaphoreSlim _changes = new(1, 1);
    private readonly Dictionary<(long TaskId, string Transformation), EtlProcess> _processes = [];
    private bool _disposed;

    internal EtlService(Database db, IReplicationConnector connector, ILogger logger)
    {
        _db = db;
        _connector = connector;
        _logger = logger;
        using (var tx = db.Environment.ReadTransaction())
            Configuration = EtlConfiguration.Read(tx);
        db.Ownership.Changed += Reconcile;
        Reconcile();
    }

    /// <summary>The configuration as last stored.</summary>
    public EtlConfiguration Configuration { get; private set; }

    /// <summary>The running transformations.</summary>
    internal IReadOnlyList<EtlProcess> Processes
    {
        get
        {
            lock (_lock)
                return [.. _processes.Values];
        }
    }

    /// <summary>The task named <paramref name="name"/> (any casing), or null.</summary>
    public EtlTask? Find(string name) => Configuration.Tasks.FirstOrDefault(t => t.Name.Equals(name, StringComparison.OrdinalIgnoreCase));

    /// <summary>400 when the task's connection string is missing or of the other kind, its name is taken by another task, or it names a task id that does not exist.</summary>
    public void Check(EtlTask task) => Check(Configuration, task);

    private void Check(EtlConfiguration c, EtlTask task)
    {
        bool found = task.Kind == EtlKind.Sql
            ? c.SqlConnectionStrings.ContainsKey(task.ConnectionStringName)
            : _db.Replication.Configuration.ConnectionStrings.ContainsKey(task.ConnectionStringName);
        if (!found)
            throw new BadRequestException($"There is no {(task.Kind == EtlKind.Sql ? "Sql" : "Raven")} connection string named '{task.ConnectionStringName}'; put it first (PUT /databases/{_db.Name}/admin/connection-strings).");
        if (task.TaskId != 0 && c.Tasks.All(t => t.TaskId != task.TaskId))
            throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no ETL task {task.TaskId} in database '{_db.Name}'.");
        if (c.Tasks.FirstOrDefault(t => t.TaskId != task.TaskId && t.Name.Equals(task.Name, StringComparison.OrdinalIgnoreCase)) is { } other)
            throw new BadRequestException($"An ETL task named '{task.Name}' already exists (task {other.TaskId}).");
    }

    /// <summary>Adds or replaces an SQL connection string (durable when this returns); the tasks using it restart.</summary>
    public Task<long> PutConnectionStringAsync(SqlConnectionString connectionString) => ChangeAsync(c => (c.With(connectionString), 0));

    /// <summary>Removes an SQL connection string; 400 while a task uses it, false when there is none by that name.</summary>
    public async Task<bool> DeleteConnectionStringAsync(string name)
    {
        bool found = false;
        await ChangeAsync(c =>
        {
            CheckUnused(c, name, EtlKind.Sql);
            found = c.SqlConnectionStrings.ContainsKey(name);
            var strings = new Dictionary<string, SqlConnectionString>(c.SqlConnectionStrings, StringComparer.OrdinalIgnoreCase);
            strings.Remove(name);
            return (c with { SqlConnectionStrings = strings }, 0);
        }).ConfigureAwait(false);
        return found;
    }

    /// <summary>400 while an ETL task of <paramref name="kind"/> loads through connection string <paramref name="name"/>.</summary>
    public void CheckUnused(string name, EtlKind kind) => CheckUnused(Configuration, name, kind);

    private static void CheckUnused(EtlConfiguration c, string name, EtlKind kind)
    {
        if (c.Tasks.FirstOrDefault(t => t.Kind == kind && t.ConnectionStringName.Equals(name, StringComparison.OrdinalIgnoreCase)) is { } user)
            throw new BadRequestException($"Connection string '{name}' is used by ETL task '{user.Name}' ({user.TaskId}); delete the task first.");
    }

    /// <summary>True when SQL connection string <paramref name="name"/> exists.</summary>
    public bool HasConnectionString(string name) => Configuration.SqlConnectionStrings.ContainsKey(name);

    /// <summary>
    /// Adds a task (TaskId 0) or replaces one; returns its id: <paramref name="newId"/> when above 0 (the Raft index of
    /// the change, the same on every member), else the database's next index. A replaced task's transformations go on
    /// from where they were (RavenDB's rule: changing a script does not reload what was loaded).
    /// </summary>
    public Task<long> PutTaskAsync(EtlTask task, long newId) => ChangeAsync(c =>
    {
        Check(c, task);
        return (c, task.TaskId);
    }, task, newId);

    /// <summary>Deletes a task and its positions; false when there is none with that id.</summary>
    public async Task<bool> DeleteTaskAsync(long taskId)
    {
        bool found = false;
        await ChangeAsync(c =>
        {
            found = c.Tasks.Any(t => t.TaskId == taskId);
            return (c.Without(taskId), taskId);
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

    /// <summary>
    /// RavenDB's reset: the transformation starts again from the first document (its destination is loaded afresh:
    /// every document's earlier load is deleted as it goes). 404 when the task or transformation does not exist.
    /// </summary>
    public async Task ResetAsync(string taskName, string transformationName)
    {
        var task = Find(taskName) ?? throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no ETL task named '{taskName}' in database '{_db.Name}'.");
        var transformation = task.Transforms.FirstOrDefault(t => t.Name.Equals(transformationName, StringComparison.OrdinalIgnoreCase))
            ?? throw new NotFoundException(RavenExceptionTypes.RavenException, $"ETL task '{taskName}' has no transformation named '{transformationName}'.");
        await _changes.WaitAsync().ConfigureAwait(false);
        try
        {
            EtlProcess? running;
            lock (_lock)
            {
                _processes.Remove((task.TaskId, transformation.Name), out running);
                _signatures.Remove((task.TaskId, transformation.Name));
            }
            running?.Dispose();
            await _db.Merger.EnqueueAsync(new DelegateCommand<long>(ctx =>
            {
                EtlPositions.Write(ctx.Transaction, task.TaskId, transformation.Name, 0);
                return 0;
            })).ConfigureAwait(false);
            Reconcile();
        }
        finally
        {
            _changes.Release();
        }
    }

    private async Task<long> ChangeAsync(Func<EtlConfiguration, (EtlConfiguration, long)> change, EtlTask? newTask = null, long newId = 0)
    {
        await _changes.WaitAsync().ConfigureAwait(false);
        try
        {
            EtlConfiguration? next = null;
            var command = new DelegateCommand<long>(ctx =>
            {
                var (changed, id) = change(EtlConfiguration.Read(ctx.Transaction));
                if (newTask != null)
                {
                    id = newTask.TaskId != 0 ? newTask.TaskId : newId > 0 ? newId : CompareExchange.CompareExchangeStore.NextIndex(ctx.Transaction);
                    changed = changed.With(newTask with { TaskId = id });
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
    /// Starts a process for each enabled transformation of each enabled task this node runs, and stops those of tasks
    /// deleted, disabled, changed, moved to another member, or whose connection string changed.
    /// </summary>
    internal void Reconcile()
    {
        var stopped = new List<EtlProcess>();
        lock (_lock)
        {
            if (_disposed)
                return;
            var wanted = new Dictionary<(long, string), (EtlTask Task, EtlTransformation Transformation, object Connection, string Signature)>();
            foreach (var task in Configuration.Tasks)
            {
                if (task.Disabled || !_db.Ownership.Owns(task.TaskId, task.MentorNode) || ConnectionOf(task) is not { } connection)
                    continue;
                foreach (var t in task.Transforms)
                    if (!t.Disabled)
                        wanted[(task.TaskId, t.Name)] = (task, t, connection, Signature(task, connection));
            }
            // A process goes on while its task and connection string read the same (they are re-read on every change).
            foreach (var (key, process) in _processes.ToList())
            {
                if (!wanted.TryGetValue(key, out var w) || _signatures.GetValueOrDefault(key) != w.Signature)
                {
                    _processes.Remove(key);
                    _signatures.Remove(key);
                    stopped.Add(process);
                }
            }
            foreach (var (key, w) in wanted)
            {
                if (_processes.ContainsKey(key))
                    continue;
                _processes[key] = new EtlProcess(_db, w.Task, w.Transformation, Destination(w.Task, w.Transformation, w.Connection), _logger);
                _signatures[key] = w.Signature;
            }
        }
        foreach (var p in stopped)
            p.Dispose();
    }

    private readonly Dictionary<(long, string), string> _signatures = [];

    private static string Signature(EtlTask task, object connection)
    {
        var buffer = new ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartArray();
            task.Write(w);
            if (connection is SqlConnectionString sql)
                sql.Write(w);
            else
                ((RavenConnectionString)connection).Write(w);
            w.WriteEndArray();
        }
        return Encoding.UTF8.GetString(buffer.WrittenSpan);
    }

    private object? ConnectionOf(EtlTask task) => task.Kind == EtlKind.Sql
        ? Configuration.SqlConnectionStrings.GetValueOrDefault(task.ConnectionStringName)
        : _db.Replication.Configuration.ConnectionStrings.GetValueOrDefault(task.ConnectionStringName);

    private IEtlDestination Destination(EtlTask task, EtlTransformation transformation, object connection) => connection switch
    {
        SqlConnectionString sql => new SqlEtlDestination(task, sql, _db.Documents),
        RavenConnectionString raven => new RavenEtlDestination(_db.Documents, raven, transformation, _db.Options.NodeTag, _connector.Http,
            TimeSpan.FromSeconds(task.LoadRequestTimeoutInSec ?? 30)),
        _ => throw new InvalidOperationException("Unknown connection string."),
    };

    /// <summary>The database committed writes: the processes read on.</summary>
    internal void NotifyWrites()
    {
        lock (_lock)
            foreach (var p in _processes.Values)
                p.Notify();
    }

    public void Dispose()
    {
        List<EtlProcess> processes;
        lock (_lock)
        {
            _disposed = true;
            processes = [.. _processes.Values];
            _processes.Clear();
        }
        foreach (var p in processes)
            p.Dispose();
        _changes.Dispose();
    }
}
