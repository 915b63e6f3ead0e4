using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Queries;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Subscriptions;

/// <summary>
/// The data subscriptions of one database: their definitions and positions (in storage, written through the merger,
/// so a 2xx or a Confirm means durable), the workers connected to them (one per subscription), and the signal that
/// wakes idle workers when writes commit.
/// </summary>
public sealed partial class SubscriptionManager(Database db)
{
    private readonly object _lock = new();
    private readonly Dictionary<string, SubscriptionConnection> _active = new(StringComparer.OrdinalIgnoreCase);
    private TaskCompletionSource _writes = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Called after each durable commit: wakes workers waiting for documents.</summary>
    public void NotifyWrites() => Interlocked.Exchange(ref _writes, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();

    /// <summary>Completes at the next commit (or after <paramref name="max"/>).</summary>
    public Task WaitForWritesAsync(TimeSpan max, CancellationToken cancellation) =>
        Task.WhenAny(Volatile.Read(ref _writes).Task, Task.Delay(max, cancellation));

    /// <summary>
    /// Parses and checks a subscription query; 400 naming what is wrong (syntax, unsupported clauses). A collection with
    /// no documents yet is fine, as RavenDB: applications create subscriptions before they store data.
    /// </summary>
    public QueryRunner.SubscriptionMatcher Compile(string query)
    {
        if (string.IsNullOrWhiteSpace(query))
            throw new BadRequestException("A subscription needs a Query (RQL: from Orders where ...).");
        // RavenDB's clients mark a subscription on revisions by "(Revisions = true)" after the collection.
        var revisions = RevisionsMarker().Match(query);
        if (revisions.Success)
            query = query.Remove(revisions.Groups["marker"].Index, revisions.Groups["marker"].Length);
        var matcher = QueryRunner.ForSubscription(db, RqlParser.Parse(query), revisions.Success);
        return matcher;
    }

    /// <summary>The etag a new subscription starts after: null/"BeginningOfTime" → 0, "LastDocument" → the last written, "A:n-..." → n; 400 otherwise.</summary>
    private long StartingEtag(string? changeVector)
    {
        if (string.IsNullOrEmpty(changeVector) || changeVector == "BeginningOfTime")
            return 0;
        if (changeVector == "LastDocument")
        {
            using var tx = db.Environment.ReadTransaction();
            return DocumentsStorage.LastEtag(tx);
        }
        return ChangeVectors.TryParseEtag(changeVector, out long etag) ? etag
            : throw new BadRequestException($"ChangeVector '{changeVector}' is not a change vector, 'BeginningOfTime', 'LastDocument' or 'DoNotChange'.");
    }

    /// <summary>
    /// Creates a subscription (a name is generated from its id when none is given); 400 when the name is taken or the
    /// query is bad. Its id is <paramref name="newId"/> when above 0 (the Raft index of the change, the same on every
    /// member of a group), else the next of this database.
    /// </summary>
    public async Task<SubscriptionState> CreateAsync(string? name, string query, string? changeVector, bool disabled,
        string? mentorNode = null, long newId = 0)
    {
        Compile(query);
        long start = StartingEtag(changeVector);
        var command = new DelegateCommand<SubscriptionState>(ctx =>
        {
            long id = newId > 0 ? newId : NextId(ctx);
            string finalName = string.IsNullOrWhiteSpace(name) ? id.ToString(CultureInfo.InvariantCulture) : name;
            if (SubscriptionStore.Get(ctx.Transaction, finalName) != null)
                throw new BadRequestException($"A subscription named '{finalName}' already exists.");
            var state = new SubscriptionState
            {
                SubscriptionId = id,
                SubscriptionName = finalName,
                Query = query,
                LastEtag = start,
                ChangeVectorForNextBatchStartingPoint = start == 0 ? null : ctx.Storage.LocalChangeVector(start),
                Disabled = disabled,
                MentorNode = mentorNode,
            };
            SubscriptionStore.Put(ctx, state);
            return state;
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        return command.Result!;
    }

    private static long NextId(DocumentsWriteContext ctx) => SubscriptionStore.All(ctx.Transaction).Select(s => s.SubscriptionId).DefaultIfEmpty(0).Max() + 1;

    /// <summary>
    /// Changes a subscription's query, starting point or state (found by name or id); its worker is disconnected and
    /// resumes under the new definition. With <paramref name="createNew"/> a missing one is created. 404 when missing.
    /// </summary>
    public async Task<SubscriptionState> UpdateAsync(string? name, long? id, string? query, string? changeVector, bool? disabled, bool createNew,
        long newId = 0)
    {
        if (query != null)
            Compile(query);
        long? start = changeVector is null or "DoNotChange" ? null : StartingEtag(changeVector);
        var command = new DelegateCommand<SubscriptionState?>(ctx =>
        {
            var state = name != null ? SubscriptionStore.Get(ctx.Transaction, name)
                : SubscriptionStore.All(ctx.Transaction).FirstOrDefault(s => s.SubscriptionId == id);
            if (state == null)
                return null;
            if (query != null)
                state.Query = query;
            if (start is { } s)
            {
                state.LastEtag = s;
                state.ChangeVectorForNextBatchStartingPoint = s == 0 ? null : ctx.Storage.LocalChangeVector(s);
            }
            if (disabled is { } d)
                state.Disabled = d;
            SubscriptionStore.Put(ctx, state);
            return state;
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        if (command.Result == null)
        {
            if (createNew && query != null)
                return await CreateAsync(name, query, changeVector, disabled ?? false, null, newId).ConfigureAwait(false);
            throw new NotFoundException(RavenExceptionTypes.SubscriptionDoesNotExist, $"There is no subscription '{name ?? id?.ToString(CultureInfo.InvariantCulture)}'.");
        }
        Drop(command.Result.SubscriptionName, "The subscription was changed.", canReconnect: !command.Result.Disabled);
        return command.Result;
    }

    /// <summary>Deletes a subscription and disconnects its worker; false when there was none.</summary>
    public async Task<bool> DeleteAsync(string name)
    {
        var command = new DelegateCommand<bool>(ctx => SubscriptionStore.Delete(ctx, name));
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        Drop(name, "The subscription was deleted.", canReconnect: false);
        return command.Result;
    }

    /// <summary>Records a worker's acknowledgement of everything up to <paramref name="etag"/>; false when the subscription is gone.</summary>
    public async Task<bool> AcknowledgeAsync(string name, long etag, DateTime connectedAt)
    {
        var command = new DelegateCommand<bool>(ctx =>
        {
            if (SubscriptionStore.Get(ctx.Transaction, name) is not { } state)
                return false;
            if (etag > state.LastEtag)
            {
                state.LastEtag = etag;
                state.ChangeVectorForNextBatchStartingPoint = ctx.Storage.LocalChangeVector(etag);
            }
            state.LastBatchAckTime = DateTime.UtcNow;
            state.LastClientConnectionTime = connectedAt;
            SubscriptionStore.Put(ctx, state);
            return true;
        });
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        return command.Result;
    }

    /// <summary>The stored subscription, or null.</summary>
    public SubscriptionState? Get(string name)
    {
        using var tx = db.Environment.ReadTransaction();
        return SubscriptionStore.Get(tx, name);
    }

    /// <summary>Every subscription.</summary>
    public List<SubscriptionState> All()
    {
        using var tx = db.Environment.ReadTransaction();
        return SubscriptionStore.All(tx);
    }

    /// <summary>True when a worker is connected to <paramref name="name"/>.</summary>
    public bool IsConnected(string name)
    {
        lock (_lock)
            return _active.ContainsKey(name);
    }

    /// <summary>
    /// Registers <paramref name="connection"/> as the worker of its subscription per its strategy: OpenIfFree fails when
    /// one is connected (null returned: "InUse"), TakeOver disconnects the other, WaitForFree waits for it to leave.
    /// </summary>
    public async Task<bool> RegisterAsync(SubscriptionConnection connection, string strategy, CancellationToken cancellation)
    {
        while (true)
        {
            lock (_lock)
            {
                if (!_active.TryGetValue(connection.Name, out var existing))
                {
                    _active[connection.Name] = connection;
                    return true;
                }
                if (strategy == "TakeOver")
                {
                    existing.Close("InUse", $"Subscription '{connection.Name}' was taken over by another worker.", canReconnect: false);
                    _active[connection.Name] = connection;
                    return true;
                }
                if (strategy != "WaitForFree")
                    return false;
            }
            await Task.Delay(250, cancellation).ConfigureAwait(false);
        }
    }

    /// <summary>Removes a worker that ended.</summary>
    public void Unregister(SubscriptionConnection connection)
    {
        lock (_lock)
        {
            if (_active.TryGetValue(connection.Name, out var current) && ReferenceEquals(current, connection))
                _active.Remove(connection.Name);
        }
    }

    /// <summary>Disconnects the worker of <paramref name="name"/> (if any); false when none was connected.</summary>
    public bool Drop(string name, string reason, bool canReconnect)
    {
        SubscriptionConnection? connection;
        lock (_lock)
            _active.TryGetValue(name, out connection);
        connection?.Close("Closed", reason, canReconnect);
        return connection != null;
    }

    /// <summary>
    /// The group's members changed: a worker of a subscription this node no longer serves is told to go to the one that
    /// does (RavenDB's <c>Redirect</c>).
    /// </summary>
    internal void OwnershipChanged()
    {
        List<SubscriptionConnection> moved;
        lock (_lock)
            moved = [.. _active.Values.Where(c => !db.Ownership.Owns(c.SubscriptionId, c.MentorNode))];
        foreach (var c in moved)
            c.Close("Redirect", $"Subscription '{c.Name}' is now served by node {db.Ownership.ResponsibleNode(c.SubscriptionId, c.MentorNode)}.", canReconnect: true);
    }

    /// <summary>Disconnects every worker (the database is closing).</summary>
    public void DropAll()
    {
        List<SubscriptionConnection> all;
        lock (_lock)
            all = [.. _active.Values];
        foreach (var c in all)
            c.Close("Closed", "The database is closing.", canReconnect: true);
    }

    [System.Text.RegularExpressions.GeneratedRegex(@"^\s*from\s+(?:'[^']*'|""[^""]*""|[^\s(]+)(?<marker>\s*\(\s*Revisions\s*=\s*true\s*\))", System.Text.RegularExpressions.RegexOptions.IgnoreCase)]
    private static partial System.Text.RegularExpressions.Regex RevisionsMarker();
}
