using RavenLite.Server.Databases;

namespace RavenLite.Server.Cluster;

/// <summary>
/// Databases on groups of nodes (docs/cluster.md "Database groups"): creating one places it through Raft on
/// ReplicationFactor nodes; every node then makes sure that each group it is a member of has its local instance, that
/// the instance replicates to every other member (RavenDB's internal replication, on the replication feed), and that it
/// has applied the group's record changes and written its committed cluster-wide transactions.
/// Reconciled whenever the cluster's state changes, and every few seconds (an instance reopened — after a settings
/// change, say — gets its senders back).
/// </summary>
public sealed class DatabaseGroups : IAsyncDisposable
{
    private static readonly TimeSpan Every = TimeSpan.FromSeconds(5);
    private readonly ClusterNode _node;
    private readonly DatabaseRegistry _registry;
    private readonly ClusterTransactions _transactions;
    private readonly DatabaseRecords _records;
    private readonly ILogger<DatabaseGroups> _logger;
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly CancellationTokenSource _stop = new();
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private Task _loop = Task.CompletedTask;

    public DatabaseGroups(ClusterNode node, DatabaseRegistry registry, ClusterTransactions transactions, DatabaseRecords records, ILogger<DatabaseGroups> logger)
    {
        _node = node;
        _registry = registry;
        _transactions = transactions;
        _records = records;
        _logger = logger;
        node.Changed += () => Volatile.Read(ref _changed).TrySetResult();
    }

    /// <summary>Starts reconciling in the background.</summary>
    public void Start() => _loop = Task.Run(LoopAsync);

    /// <summary>
    /// From any node: places database <paramref name="name"/> on <paramref name="replicationFactor"/> nodes (this one
    /// first, then the others by tag; watchers hold none), commits it through Raft and creates the local instance.
    /// 409 when it exists (checked here, and again when applied: of two nodes asked at once, the first committed wins);
    /// 400 when the cluster has fewer nodes.
    /// </summary>
    public async Task<(long Index, IReadOnlyList<string> Members)> CreateAsync(string name, int replicationFactor, CancellationToken token, bool encrypted = false)
    {
        DatabaseRegistry.ValidateName(name);
        if (replicationFactor < 1)
            throw new BadRequestException($"ReplicationFactor must be at least 1 (got {replicationFactor}).");
        // Asked of any node: it first applies everything already committed, so it places the database on the nodes the
        // leader knows (a node added a moment ago included).
        await _node.ReadBarrierAsync(token).ConfigureAwait(false);
        var (exists, candidates) = _node.Read(s => (s.Databases.ContainsKey(name),
            s.Nodes.Where(n => !n.Value.Watcher).Select(n => n.Key).OrderBy(t => t == _node.Tag ? "" : t, StringComparer.Ordinal).ToList()));
        if (exists || _registry.Find(name) != null)
            throw new ConcurrencyException($"Database '{name}' already exists.");
        if (replicationFactor > candidates.Count)
            throw new BadRequestException($"ReplicationFactor {replicationFactor} is more than the cluster's {candidates.Count} member node(s).");
        var members = candidates.Take(replicationFactor).ToList();
        if (encrypted)
        {
            // RavenDB's rule: every member of an encrypted database's group serves HTTPS; this node holds the key already.
            _registry.CheckEncryptable(name);
            if (_node.Read(s => members.FirstOrDefault(m => !s.Nodes[m].Url.StartsWith("https:", StringComparison.OrdinalIgnoreCase))) is { } plain)
                throw new BadRequestException($"Database {name} is encrypted and requires a node which supports SSL; node {plain} does not.");
        }
        string requestId = ClusterNode.NewRequestId();
        var result = await _node.AskAsync(requestId, ClusterCommands.Group(requestId, name, members, Documents.ChangeVectors.NewDatabaseId(), encrypted), token).ConfigureAwait(false);
        if (!result.Successful)
            throw new ConcurrencyException($"Database '{name}' already exists.");
        long index = result.Index;
        await ReconcileAsync(token).ConfigureAwait(false);
        return (index, members);
    }

    /// <summary>
    /// Adds node <paramref name="tag"/> (null: the first node by tag that holds none, watchers aside) to group
    /// <paramref name="name"/> as a promotable: it gets its instance, its mentor (<paramref name="mentor"/>, a member; null:
    /// one the cluster picks) feeds it, and the observer makes it a member once the mentor finds it caught up. 400 when the node is unknown or already in the group; 404 when no group has that name.
    /// </summary>
    public async Task<(long Index, string Tag)> AddNodeAsync(string name, string? tag, string? mentor, CancellationToken token)
    {
        await _node.ReadBarrierAsync(token).ConfigureAwait(false);
        var (group, candidates) = _node.Read(s => (s.Databases.GetValueOrDefault(name), s.Nodes.Where(n => !n.Value.Watcher).Select(n => n.Key).ToList()));
        if (group == null)
            throw new DatabaseMissingException(name);
        tag ??= candidates.FirstOrDefault(c => !group.All.Contains(c)) ?? throw new BadRequestException($"Every member node of the cluster already holds database '{name}'.");
        if (!candidates.Contains(tag))
            throw new BadRequestException($"The cluster has no member node tagged {tag}.");
        if (group.All.Contains(tag))
            throw new BadRequestException($"Node {tag} already holds database '{name}'.");
        if (mentor != null && !group.Members.Contains(mentor))
            throw new BadRequestException($"The mentor must be a member of database '{name}' ({string.Join(", ", group.Members)}); {mentor} is not.");
        long index = await _node.SendAsync(ClusterCommands.GroupChange(ClusterCommands.AddDatabaseNode, name, tag, mentor: mentor), token).ConfigureAwait(false);
        await ReconcileAsync(token).ConfigureAwait(false);
        return (index, tag);
    }

    /// <summary>Puts group <paramref name="name"/>'s members in <paramref name="order"/> (the same members): the order clients prefer them in.</summary>
    public async Task<long> ReorderAsync(string name, IReadOnlyList<string> order, CancellationToken token)
    {
        var group = _node.Read(s => s.Databases.GetValueOrDefault(name)) ?? throw new DatabaseMissingException(name);
        if (!order.Order(StringComparer.Ordinal).SequenceEqual(group.Members.Order(StringComparer.Ordinal)))
            throw new BadRequestException($"MembersOrder must list the members of database '{name}' once each: {string.Join(", ", group.Members)}.");
        return await _node.SendAsync(ClusterCommands.GroupChange(ClusterCommands.ReorderDatabaseGroup, name, members: order), token).ConfigureAwait(false);
    }

    /// <summary>Deletes group <paramref name="name"/>'s database: every node that holds an instance deletes it.</summary>
    public async Task<long> DeleteAsync(string name, CancellationToken token)
    {
        long index = await _node.SendAsync(ClusterCommands.GroupChange(ClusterCommands.DeleteDatabaseGroup, name), token).ConfigureAwait(false);
        await ReconcileAsync(token).ConfigureAwait(false);
        return index;
    }

    /// <summary>Makes this node's instances match the groups it is a member of (create, and replicate to the others).</summary>
    public async Task ReconcileAsync(CancellationToken token)
    {
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            string me = _node.Tag;
            foreach (string deleted in _node.Read(s => s.Deleted.ToList()))
                if (_registry.Find(deleted) != null)
                    _registry.Delete(deleted);
            var groups = _node.Read(s => s.Databases.Where(d => d.Value.All.Contains(me))
                .Select(d => (Name: d.Key, d.Value.Members, Destinations: d.Value.DestinationsOf(me).Where(s.Nodes.ContainsKey).ToList(),
                    Urls: d.Value.All.Where(s.Nodes.ContainsKey).ToDictionary(m => m, m => s.Nodes[m].Url, StringComparer.Ordinal), d.Value.Encrypted))
                .ToList());
            foreach (var (name, members, destinations, urls, encrypted) in groups)
            {
                if (_registry.Find(name) == null)
                {
                    if (encrypted && !_registry.Keys.Has(name))
                    {
                        // Created once its key is distributed here (the next reconciliation after POST /admin/secrets).
                        Logging.Log.EncryptedDatabaseWaitsForKey(_logger, name, me);
                        continue;
                    }
                    try
                    {
                        _registry.Create(name, encrypted);
                    }
                    catch (ConcurrencyException)
                    {
                        // created meanwhile
                    }
                }
                var db = _registry.Acquire(name);
                try
                {
                    db.Replication.SetGroupMembers(destinations.ToDictionary(t => t, t => urls[t], StringComparer.Ordinal));
                    db.Ownership.SetGroup(me, members, urls);
                    db.Documents.IdentitiesFromCluster = true;
                    await _records.ApplyAsync(db, token).ConfigureAwait(false);
                    await _transactions.ApplyAsync(db, token).ConfigureAwait(false);
                }
                finally
                {
                    db.Release();
                }
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    private async Task LoopAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            var changed = Volatile.Read(ref _changed); // taken before reconciling: a change meanwhile is not missed
            try
            {
                await ReconcileAsync(_stop.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (_stop.IsCancellationRequested)
            {
                return;
            }
            catch (Exception e) when (e is DomainException or IOException or InvalidOperationException)
            {
                Logging.Log.DatabaseGroupsFailed(_logger, e.Message);
            }
            try
            {
                await changed.Task.WaitAsync(Every, _stop.Token).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
            }
            catch (OperationCanceledException)
            {
                return;
            }
            if (changed.Task.IsCompleted)
                Interlocked.CompareExchange(ref _changed, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously), changed);
        }
    }

    private int _disposed;

    /// <summary>Stops reconciling (once: the host stops it, then the container disposes it).</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
            return;
        await _stop.CancelAsync().ConfigureAwait(false);
        try
        {
            await _loop.ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
        }
        _stop.Dispose();
    }
}
