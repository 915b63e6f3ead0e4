using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Attachments;
using RavenLite.Client.Commands;
using RavenLite.Client.CompareExchange;
using RavenLite.Client.Counters;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Linq;

namespace RavenLite.Client.Session;

/// <summary>
/// The unit of work (see <see cref="IAsyncDocumentSession"/>). Invariants:
/// 1. One tracked entity instance per id (case-insensitive), and one id per tracked instance.
/// 2. A tracked entity's <see cref="DocumentInfo.Original"/> is its document JSON as of load or
///    last save; it is sent again only when its serialization differs (change tracking).
/// 3. Every request goes through <see cref="CountRequest"/>, which enforces the request guard.
/// Not thread-safe.
/// </summary>
internal sealed class AsyncDocumentSession : IAsyncDocumentSession, IAsyncAdvancedSessionOperations
{
    private readonly Dictionary<string, DocumentInfo> _byId = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<object, DocumentInfo> _byEntity = new(ReferenceEqualityComparer.Instance);
    private readonly Dictionary<string, string?> _deletes = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<string, JsonObject> _included = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<string, List<JsonObject>> _counterOperations = new(StringComparer.OrdinalIgnoreCase);
    private readonly Dictionary<string, string?> _deletedChangeVectors = new(StringComparer.OrdinalIgnoreCase);
    private readonly List<JsonObject> _attachmentCommands = [];
    private readonly List<string> _forcedRevisions = [];
    private readonly List<JsonObject> _patches = [];
    private readonly Dictionary<(string Id, string Name), TimeSeries.PendingTimeSeries> _timeSeries = new();
    private readonly List<Stream> _attachmentStreams = [];
    private bool _disposed;

    public AsyncDocumentSession(DocumentStore store, string database, TransactionMode transactionMode = TransactionMode.SingleNode)
    {
        Store = store;
        Database = database;
        TransactionMode = transactionMode;
        MaxNumberOfRequestsPerSession = store.Conventions.MaxNumberOfRequestsPerSession;
        UseOptimisticConcurrency = store.Conventions.UseOptimisticConcurrency;
    }

    public DocumentStore Store { get; }

    public string Database { get; }

    private DocumentConventions Conventions => Store.Conventions;

    public IAsyncAdvancedSessionOperations Advanced => this;

    public TransactionMode TransactionMode { get; }

    public IClusterTransactionOperations ClusterTransaction => TransactionMode == TransactionMode.ClusterWide
        ? _cluster ??= new ClusterTransactionOperations(this)
        : throw new InvalidOperationException("Compare-exchange values in a session need a cluster-wide session: OpenAsyncSession(new SessionOptions { TransactionMode = TransactionMode.ClusterWide }).");

    private ClusterTransactionOperations? _cluster;

    public int NumberOfRequests { get; private set; }

    public int MaxNumberOfRequestsPerSession { get; set; }

    public bool UseOptimisticConcurrency { get; set; }

    public async Task StoreAsync(object entity, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(entity);
        ThrowIfDisposed();
        if (_byEntity.ContainsKey(entity))
            return;
        string? id = Conventions.IdentityProperty(entity.GetType())?.GetValue(entity) as string;
        if (string.IsNullOrEmpty(id))
            id = await Store.GenerateDocumentIdAsync(Database, entity, cancellationToken).ConfigureAwait(false);
        Track(entity, null, id, explicitChangeVector: false);
    }

    public Task StoreAsync(object entity, string id, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(entity);
        ArgumentException.ThrowIfNullOrEmpty(id);
        ThrowIfDisposed();
        Track(entity, null, id, explicitChangeVector: false);
        return Task.CompletedTask;
    }

    public Task StoreAsync(object entity, string? changeVector, string id, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(entity);
        ArgumentException.ThrowIfNullOrEmpty(id);
        ThrowIfDisposed();
        Track(entity, changeVector, id, explicitChangeVector: true);
        return Task.CompletedTask;
    }

    private void Track(object entity, string? changeVector, string id, bool explicitChangeVector)
    {
        if (_byEntity.TryGetValue(entity, out var existing))
        {
            if (!string.Equals(existing.Id, id, StringComparison.OrdinalIgnoreCase))
                throw new InvalidOperationException($"This entity is already tracked as '{existing.Id}'; it cannot be stored again as '{id}'.");
            if (explicitChangeVector)
                existing.ConcurrencyCheck = changeVector;
            return;
        }
        if (_byId.TryGetValue(id, out var other) && !ReferenceEquals(other.Entity, entity))
            throw new InvalidOperationException($"Another entity is already tracked with id '{id}'. Load it and change that instance, or Evict it first.");
        _deletes.Remove(id);
        Conventions.IdentityProperty(entity.GetType())?.SetValue(entity, id);
        string collection = Conventions.FindCollectionName(entity.GetType());
        var info = new DocumentInfo(id, entity, new JsonObject
        {
            ["@collection"] = collection,
            ["Raven-Clr-Type"] = $"{entity.GetType().FullName}, {entity.GetType().Assembly.GetName().Name}",
        })
        {
            IsNew = true,
            ConcurrencyCheck = explicitChangeVector ? changeVector : null,
            HasConcurrencyCheck = explicitChangeVector,
        };
        _byId[id] = info;
        _byEntity[entity] = info;
    }

    public async Task<T?> LoadAsync<T>(string id, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrEmpty(id);
        var all = await LoadCoreAsync<T>([id], null, cancellationToken).ConfigureAwait(false);
        return all[id];
    }

    public Task<Dictionary<string, T?>> LoadAsync<T>(IEnumerable<string> ids, CancellationToken cancellationToken = default) =>
        LoadCoreAsync<T>(ids.ToList(), null, cancellationToken);

    public IAsyncLoaderWithInclude Include(string path) => new LoaderWithInclude(this, [path]);

    internal async Task<Dictionary<string, T?>> LoadCoreAsync<T>(IReadOnlyList<string> ids, IReadOnlyList<string>? includes, CancellationToken cancellationToken)
    {
        ThrowIfDisposed();
        var result = new Dictionary<string, T?>(StringComparer.OrdinalIgnoreCase);
        var toFetch = new List<string>();
        foreach (string id in ids)
        {
            if (result.ContainsKey(id))
                continue;
            if (_deletes.ContainsKey(id))
            {
                result[id] = default;
                continue;
            }
            if (_byId.TryGetValue(id, out var info))
            {
                result[id] = (T)info.Entity;
                continue;
            }
            if (includes == null && _included.Remove(id, out var doc))
            {
                result[id] = Materialize<T>(doc);
                continue;
            }
            result[id] = default;
            toFetch.Add(id);
        }
        if (toFetch.Count == 0 && includes == null)
            return result;
        if (toFetch.Count == 0)
            toFetch.AddRange(ids.Distinct(StringComparer.OrdinalIgnoreCase)); // includes of tracked documents still need the server
        CountRequest();
        var answer = await Store.Executor.ExecuteAsync(new GetDocumentsCommand(toFetch, includes), Database, cancellationToken).ConfigureAwait(false);
        foreach (var inc in answer.Includes)
            if (inc["@metadata"]?["@id"]?.GetValue<string>() is { } incId && !_byId.ContainsKey(incId))
                _included[incId] = inc;
        for (int i = 0; i < toFetch.Count && i < answer.Results.Count; i++)
        {
            if (answer.Results[i] is { } doc)
                result[toFetch[i]] = _byId.TryGetValue(toFetch[i], out var tracked) ? (T)tracked.Entity : Materialize<T>(doc);
        }
        return result;
    }

    /// <summary>Turns a server document into a tracked entity (or returns the tracked instance for its id).</summary>
    internal T Materialize<T>(JsonObject document)
    {
        var metadata = document["@metadata"] as JsonObject ?? throw new RavenException("A document arrived without @metadata.");
        string id = metadata["@id"]?.GetValue<string>() ?? throw new RavenException("A document arrived without @metadata.@id.");
        if (_byId.TryGetValue(id, out var tracked))
            return (T)tracked.Entity;
        var entity = WithoutMetadata(document).Deserialize<T>(Conventions.JsonSerializerOptions) ?? throw new RavenException($"Document '{id}' deserialized to null as {typeof(T).Name}.");
        Conventions.IdentityProperty(entity.GetType())?.SetValue(entity, id);
        var info = new DocumentInfo(id, entity, (JsonObject)metadata.DeepClone())
        {
            ChangeVector = metadata["@change-vector"]?.GetValue<string>(),
        };
        info.Original = ToDocument(info).ToJsonString();
        _byId[id] = info;
        _byEntity[entity] = info;
        return entity;
    }

    /// <summary>The document JSON of a tracked entity: its serialization without the identity property, plus metadata.</summary>
    private JsonObject ToDocument(DocumentInfo info)
    {
        var node = JsonSerializer.SerializeToNode(info.Entity, info.Entity.GetType(), Conventions.JsonSerializerOptions) as JsonObject
            ?? throw new InvalidOperationException($"Entity '{info.Id}' ({info.Entity.GetType().Name}) does not serialize to a JSON object.");
        node.Remove(Conventions.IdentityJsonName);
        node["@metadata"] = info.Metadata.DeepClone();
        return node;
    }

    public void Delete<T>(T entity)
    {
        ArgumentNullException.ThrowIfNull(entity);
        ThrowIfDisposed();
        if (!_byEntity.TryGetValue(entity, out var info))
            throw new InvalidOperationException($"{entity.GetType().Name} is not tracked by this session: load it first, or delete by id.");
        Untrack(info);
        if (!info.IsNew)
            _deletes[info.Id] = UseOptimisticConcurrency ? info.ChangeVector : null;
    }

    public void Delete(string id) => Delete(id, null);

    public void Delete(string id, string? expectedChangeVector)
    {
        ArgumentException.ThrowIfNullOrEmpty(id);
        ThrowIfDisposed();
        string? cv = expectedChangeVector;
        if (_byId.TryGetValue(id, out var info))
        {
            Untrack(info);
            cv ??= UseOptimisticConcurrency ? info.ChangeVector : null;
            _deletedChangeVectors[id] = info.ChangeVector;
        }
        _included.Remove(id);
        _deletes[id] = cv;
    }

    private void Untrack(DocumentInfo info)
    {
        _byId.Remove(info.Id);
        _byEntity.Remove(info.Entity);
    }

    public async Task SaveChangesAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfDisposed();
        var commands = new JsonArray();
        var deleted = new List<string>();
        bool clusterWide = TransactionMode == TransactionMode.ClusterWide;
        if (clusterWide && _counterOperations.Count > 0)
            throw new InvalidOperationException("A cluster-wide session cannot change counters: save them with a single-node session.");
        foreach (var (id, cv) in _deletes)
        {
            var delete = new JsonObject { ["Id"] = id, ["ChangeVector"] = cv, ["Type"] = "DELETE" };
            if (clusterWide)
                delete["OriginalChangeVector"] = _deletedChangeVectors.GetValueOrDefault(id);
            commands.Add(delete);
            deleted.Add(id);
        }
        var saved = new List<DocumentInfo>();
        foreach (var info in _byEntity.Values)
        {
            var doc = ToDocument(info);
            if (!info.IsNew && !info.HasConcurrencyCheck && doc.ToJsonString() == info.Original)
                continue;
            string? cv = info.HasConcurrencyCheck ? info.ConcurrencyCheck : UseOptimisticConcurrency ? info.ChangeVector ?? "" : null;
            var put = new JsonObject { ["Id"] = info.Id, ["ChangeVector"] = cv, ["Document"] = doc, ["Type"] = "PUT" };
            if (clusterWide)
                put["OriginalChangeVector"] = info.ChangeVector; // the atomic guard's check: what this session loaded (null: a new document)
            commands.Add(put);
            saved.Add(info);
        }
        var compareExchange = _cluster?.Commands() ?? [];
        foreach (var c in compareExchange)
            commands.Add(c);
        var countersOf = new List<string>();
        int counterResults = deleted.Count + saved.Count + compareExchange.Count;
        foreach (var (id, operations) in _counterOperations)
        {
            commands.Add(new JsonObject { ["Id"] = id, ["Type"] = "Counters", ["Counters"] = CountersJson.Document(id, operations.Select(o => (JsonObject)o.DeepClone())) });
            countersOf.Add(id);
        }
        if (clusterWide && _attachmentCommands.Count > 0)
            throw new InvalidOperationException("A cluster-wide session cannot change attachments: save them with a single-node session.");
        foreach (var patch in _patches)
            commands.Add(patch.DeepClone());
        int attachmentResults = commands.Count;
        foreach (var c in _attachmentCommands)
            commands.Add(c.DeepClone());
        foreach (var ((id, _), pending) in _timeSeries)
            commands.Add(new JsonObject { ["Id"] = id, ["TimeSeries"] = pending.ToJson(), ["Type"] = "TimeSeries" });
        int revisionResults = commands.Count;
        foreach (string id in _forcedRevisions)
            commands.Add(new JsonObject { ["Id"] = id, ["Type"] = "ForceRevisionCreation" });
        if (commands.Count == 0)
            return;
        CountRequest();
        var results = await Store.Executor.ExecuteAsync(new BatchCommand(commands, clusterWide, _attachmentStreams), Database, cancellationToken).ConfigureAwait(false);
        _attachmentCommands.Clear();
        _attachmentStreams.Clear();
        _forcedRevisions.Clear();
        _timeSeries.Clear();
        _patches.Clear();
        foreach (string id in deleted)
        {
            _deletes.Remove(id);
            _deletedChangeVectors.Remove(id);
        }
        _cluster?.Saved(results);
        for (int i = 0; i < saved.Count; i++)
        {
            var info = saved[i];
            if (results.ElementAtOrDefault(deleted.Count + i) is JsonObject r)
            {
                info.ChangeVector = r["@change-vector"]?.GetValue<string>();
                info.Metadata["@id"] = info.Id;
                info.Metadata["@change-vector"] = info.ChangeVector;
                if (r["@last-modified"]?.GetValue<string>() is { } lm)
                    info.Metadata["@last-modified"] = lm;
            }
            info.IsNew = false;
            info.HasConcurrencyCheck = false;
            info.ConcurrencyCheck = null;
            info.Original = ToDocument(info).ToJsonString();
        }
        _counterOperations.Clear();
        for (int i = 0; i < countersOf.Count; i++)
        {
            // A new counter name changes the document (its @counters): the tracked change vector follows.
            if (results.ElementAtOrDefault(counterResults + i) is JsonObject r && r["DocumentChangeVector"]?.GetValue<string>() is { } cv
                && _byId.TryGetValue(countersOf[i], out var tracked))
            {
                tracked.ChangeVector = cv;
                tracked.Metadata["@change-vector"] = cv;
            }
        }
        // Last: attachment commands ran after the batch's puts, so their change vectors are the documents' latest.
        for (int i = attachmentResults; i < revisionResults; i++)
            if (results[i] is JsonObject r)
                ApplyAttachmentResult(r);
        for (int i = revisionResults; i < results.Count; i++)
        {
            // A forced revision of a document without revisions gives it HasRevisions: a new change vector.
            if (results[i] is JsonObject r && (bool?)r["RevisionCreated"] == true && (string?)r["@id"] is { } id && _byId.TryGetValue(id, out var tracked)
                && (string?)r["@change-vector"] is { } cv)
            {
                tracked.ChangeVector = cv;
                tracked.Metadata["@change-vector"] = cv;
                if ((string?)r["@flags"] is { } flags)
                    tracked.Metadata["@flags"] = flags;
                tracked.Original = ToDocument(tracked).ToJsonString();
            }
        }
    }

    public IRavenQueryable<T> Query<T>(string? indexName = null, string? collectionName = null)
    {
        ThrowIfDisposed();
        var provider = new RavenQueryProvider(this, typeof(T), indexName, collectionName ?? (indexName == null ? Conventions.FindCollectionName(typeof(T)) : null));
        return new RavenQueryable<T>(provider);
    }

    public IAsyncRawDocumentQuery<T> AsyncRawQuery<T>(string rql)
    {
        ArgumentException.ThrowIfNullOrEmpty(rql);
        return new RawDocumentQuery<T>(this, rql);
    }

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(string startsWith, string? matches = null, int start = 0, int pageSize = int.MaxValue,
        string? startAfter = null, string? exclude = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(startsWith);
        var path = new System.Text.StringBuilder("/streams/docs?format=jsonl&startsWith=").Append(Uri.EscapeDataString(startsWith));
        if (matches != null)
            path.Append("&matches=").Append(Uri.EscapeDataString(matches));
        if (exclude != null)
            path.Append("&exclude=").Append(Uri.EscapeDataString(exclude));
        if (startAfter != null)
            path.Append("&startAfter=").Append(Uri.EscapeDataString(startAfter));
        if (start > 0)
            path.Append("&start=").Append(start);
        if (pageSize != int.MaxValue)
            path.Append("&pageSize=").Append(pageSize);
        return OpenStreamAsync<T>(new Streaming.StreamCommand(path.ToString(), null), null, cancellationToken);
    }

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IQueryable<T> query, CancellationToken cancellationToken = default) =>
        StreamAsync(query, out _, cancellationToken);

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IQueryable<T> query, out Streaming.StreamQueryStatistics stats, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(query);
        var provider = query.Provider as RavenQueryProvider ?? throw new ArgumentException("Only a query of this session (session.Query<T>()) can be streamed.", nameof(query));
        if (provider.WaitForNonStale != null)
            throw new NotSupportedException("A streamed query does not wait for indexing: remove WaitForNonStaleResults.");
        var rql = provider.Translate(query.Expression);
        stats = new Streaming.StreamQueryStatistics();
        return OpenStreamAsync<T>(QueryStream(rql.Rql, rql.Parameters), stats, cancellationToken);
    }

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IAsyncRawDocumentQuery<T> query, CancellationToken cancellationToken = default) =>
        StreamAsync(query, out _, cancellationToken);

    public Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IAsyncRawDocumentQuery<T> query, out Streaming.StreamQueryStatistics stats, CancellationToken cancellationToken = default)
    {
        var raw = query as RawDocumentQuery<T> ?? throw new ArgumentException("Only a query of this session (session.Advanced.AsyncRawQuery<T>()) can be streamed.", nameof(query));
        if (raw.Waits)
            throw new NotSupportedException("A streamed query does not wait for indexing: remove WaitForNonStaleResults.");
        stats = new Streaming.StreamQueryStatistics();
        return OpenStreamAsync<T>(QueryStream(raw.Rql, raw.Parameters), stats, cancellationToken);
    }

    private static Streaming.StreamCommand QueryStream(string rql, JsonObject parameters) =>
        new("/streams/queries?format=jsonl", new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters.DeepClone() });

    private async Task<IAsyncEnumerator<Streaming.StreamResult<T>>> OpenStreamAsync<T>(Streaming.StreamCommand command, Streaming.StreamQueryStatistics? stats, CancellationToken cancellationToken)
    {
        ThrowIfDisposed();
        CountRequest();
        var response = await Store.Executor.ExecuteAsync(command, Database, cancellationToken).ConfigureAwait(false);
        var lines = await Streaming.StreamReading.OpenAsync(response, stats != null, stats, cancellationToken).ConfigureAwait(false);
        return StreamResults<T>(lines).GetAsyncEnumerator(cancellationToken);
    }

    private async IAsyncEnumerable<Streaming.StreamResult<T>> StreamResults<T>(IAsyncEnumerator<JsonObject> lines)
    {
        await using (lines.ConfigureAwait(false))
        {
            while (await lines.MoveNextAsync().ConfigureAwait(false))
            {
                var result = lines.Current;
                var metadata = result["@metadata"] as JsonObject ?? [];
                yield return new Streaming.StreamResult<T>((string?)metadata["@id"], (string?)metadata["@change-vector"], metadata,
                    metadata["@projection"]?.GetValue<bool>() == true || metadata["@id"] == null ? FromQueryResult<T>(result) : Detached<T>(result));
            }
        }
    }


    private readonly List<Lazy.PendingLazy> _lazies = [];
    private SessionLazily? _lazily;

    public Lazy.IAsyncLazySessionOperations Lazily => _lazily ??= new SessionLazily(this);

    public Lazy.IAsyncEagerSessionOperations Eagerly => _lazily ??= new SessionLazily(this);

    /// <summary>Defers a request until a lazy value is asked for; <paramref name="read"/> turns its answer (status, JSON) into the value.</summary>
    internal Lazy<Task<TResult>> AddLazy<TResult>(string url, string query, string method, JsonObject? content, Func<int, JsonNode?, TResult> read, bool notFoundIsAnswer = false)
    {
        ThrowIfDisposed();
        var pending = new Lazy.PendingLazy(url, query, method, content, notFoundIsAnswer);
        _lazies.Add(pending);
        return new Lazy<Task<TResult>>(async () =>
        {
            if (!pending.Done.Task.IsCompleted)
                await ExecuteAllPendingLazyOperationsAsync(default).ConfigureAwait(false);
            var (status, result) = await pending.Done.Task.ConfigureAwait(false);
            return read(status, result);
        });
    }

    internal async Task ExecuteAllPendingLazyOperationsAsync(CancellationToken cancellationToken)
    {
        if (_lazies.Count == 0)
            return;
        var batch = _lazies.ToList();
        _lazies.Clear();
        try
        {
            CountRequest();
            var results = await Store.Executor.ExecuteAsync(new Lazy.MultiGetCommand(batch), Database, cancellationToken).ConfigureAwait(false);
            await Lazy.MultiGetCommand.DispatchAsync(batch, results, cancellationToken).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            foreach (var p in batch)
                p.Done.TrySetException(e);
            throw;
        }
    }

    /// <summary>A lazy query: its RQL answered inside the next multi_get; <paramref name="read"/> gets the answer.</summary>
    internal Lazy<Task<TResult>> AddLazyQuery<TResult>(QueryCommand command, Func<QueryResult, TResult> read) =>
        AddLazy("/queries", "", "POST", command.Body(), (_, json) => read(QueryCommand.Parse(json as JsonObject ?? [])));

    private sealed class SessionLazily(AsyncDocumentSession session) : Lazy.IAsyncLazySessionOperations, Lazy.IAsyncEagerSessionOperations
    {
        public Lazy<Task<T?>> LoadAsync<T>(string id)
        {
            ArgumentException.ThrowIfNullOrEmpty(id);
            var many = LoadAsync<T>([id]);
            return new Lazy<Task<T?>>(async () => (await many.Value.ConfigureAwait(false)).GetValueOrDefault(id));
        }

        public Lazy<Task<Dictionary<string, T?>>> LoadAsync<T>(IEnumerable<string> ids)
        {
            var list = ids.Distinct(StringComparer.OrdinalIgnoreCase).ToList();
            var query = new StringBuilder("?");
            foreach (string id in list)
                query.Append("&id=").Append(Uri.EscapeDataString(id));
            return session.AddLazy("/docs", query.ToString(), "GET", null, (status, json) =>
            {
                var result = new Dictionary<string, T?>(StringComparer.OrdinalIgnoreCase);
                var docs = status == 404 ? null : (json as JsonObject)?["Results"] as JsonArray;
                for (int i = 0; i < list.Count; i++)
                    result[list[i]] = docs != null && i < docs.Count && docs[i] is JsonObject d ? session.Materialize<T>(d) : default;
                return result;
            }, notFoundIsAnswer: true);
        }

        public Task ExecuteAllPendingLazyOperationsAsync(CancellationToken cancellationToken = default) => session.ExecuteAllPendingLazyOperationsAsync(cancellationToken);
    }

    /// <summary>Runs a query (counted against the request guard); keeps its included documents for later loads.</summary>
    internal async Task<QueryResult> ExecuteQueryAsync(QueryCommand command, CancellationToken cancellationToken)
    {
        ThrowIfDisposed();
        CountRequest();
        var result = await Store.Executor.ExecuteAsync(command, Database, cancellationToken).ConfigureAwait(false);
        foreach (var inc in result.Includes)
            if (inc["@metadata"]?["@id"]?.GetValue<string>() is { } id && !_byId.ContainsKey(id))
                _included[id] = inc;
        return result;
    }

    /// <summary>Turns one query result into <typeparamref name="T"/>: a tracked entity for whole documents, a plain object for projections.</summary>
    internal T FromQueryResult<T>(JsonObject result)
    {
        var metadata = result["@metadata"] as JsonObject;
        bool projection = metadata?["@projection"]?.GetValue<bool>() == true || metadata?["@id"] == null;
        if (!projection)
            return Materialize<T>(result);
        if (IsScalar(typeof(T)))
        {
            // select Name: a one-field projection into a scalar.
            foreach (var (k, v) in result)
                if (k != "@metadata")
                    return v.Deserialize<T>(Conventions.JsonSerializerOptions)!;
            return default!;
        }
        return WithoutMetadata(result).Deserialize<T>(Conventions.JsonSerializerOptions)!;
    }

    /// <summary>A copy of a server document or projection without its <c>@metadata</c>: the entity's own fields.</summary>
    private static JsonObject WithoutMetadata(JsonObject document)
    {
        var body = new JsonObject();
        foreach (var (k, v) in document)
            if (k != "@metadata")
                body[k] = v?.DeepClone();
        return body;
    }

    private static bool IsScalar(Type t)
    {
        t = Nullable.GetUnderlyingType(t) ?? t;
        return t.IsPrimitive || t == typeof(string) || t == typeof(decimal) || t == typeof(DateTime) || t == typeof(DateTimeOffset) || t == typeof(Guid) || t.IsEnum;
    }

    private void CountRequest()
    {
        if (++NumberOfRequests > MaxNumberOfRequestsPerSession)
        {
            throw new InvalidOperationException(
                $"This session made more than {MaxNumberOfRequestsPerSession} requests. A session is one short unit of work: load several documents at once with LoadAsync(ids) or Include(), " +
                "query instead of loading in a loop, or open a new session per unit of work. If this many requests are intended, raise session.Advanced.MaxNumberOfRequestsPerSession " +
                "(or DocumentConventions.MaxNumberOfRequestsPerSession).");
        }
    }

    public bool HasChanges => _deletes.Count > 0 || _counterOperations.Count > 0 || _attachmentCommands.Count > 0 || _forcedRevisions.Count > 0 || _timeSeries.Count > 0 || _patches.Count > 0 || (_cluster?.HasChanges ?? false) || _byEntity.Values.Any(IsChanged);

    public ISessionDocumentCounters CountersFor(string documentId)
    {
        ArgumentException.ThrowIfNullOrEmpty(documentId);
        return new SessionDocumentCounters(this, documentId);
    }

    public ISessionDocumentCounters CountersFor(object entity) => new SessionDocumentCounters(this, Tracked(entity).Id);

    private void AddCounterOperation(string documentId, CounterOperationType type, string counter, long delta)
    {
        ArgumentException.ThrowIfNullOrEmpty(counter);
        ThrowIfDisposed();
        if (!_counterOperations.TryGetValue(documentId, out var list))
            _counterOperations[documentId] = list = [];
        list.Add(CountersJson.Operation(type, counter, delta));
    }

    private async Task<IReadOnlyList<CounterDetail?>> GetCountersAsync(string documentId, string[] counters, CancellationToken cancellationToken)
    {
        ThrowIfDisposed();
        CountRequest();
        return await Store.Executor.ExecuteAsync(new CountersJson.GetCommand(documentId, counters), Database, cancellationToken).ConfigureAwait(false);
    }

    public void Patch(string id, Patching.PatchRequest patch, Patching.PatchRequest? patchIfMissing = null)
    {
        ArgumentException.ThrowIfNullOrEmpty(id);
        ArgumentNullException.ThrowIfNull(patch);
        ThrowIfDisposed();
        _patches.Add(new JsonObject
        {
            ["Id"] = id,
            ["ChangeVector"] = null,
            ["Patch"] = patch.ToJson(Conventions),
            ["PatchIfMissing"] = patchIfMissing?.ToJson(Conventions),
            ["Type"] = "PATCH",
        });
    }

    public void Increment(string id, string path, long delta)
    {
        ArgumentException.ThrowIfNullOrEmpty(path);
        if (!System.Text.RegularExpressions.Regex.IsMatch(path, @"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$"))
            throw new ArgumentException($"'{path}' is not a property path (names separated by dots).", nameof(path));
        Patch(id, new Patching.PatchRequest($"this.{path} = (this.{path} || 0) + args.delta;", new Dictionary<string, object?> { ["delta"] = delta }));
    }

    public TimeSeries.ISessionDocumentTimeSeries TimeSeriesFor(string documentId, string name)
    {
        ArgumentException.ThrowIfNullOrEmpty(documentId);
        ArgumentException.ThrowIfNullOrEmpty(name);
        return new SessionTimeSeries(this, documentId, name);
    }

    public TimeSeries.ISessionDocumentTimeSeries TimeSeriesFor(object entity, string name) => TimeSeriesFor(Tracked(entity).Id, name);

    /// <summary>One series through this session.</summary>
    private sealed class SessionTimeSeries(AsyncDocumentSession session, string documentId, string name) : TimeSeries.ISessionDocumentTimeSeries
    {
        private TimeSeries.PendingTimeSeries Pending()
        {
            session.ThrowIfDisposed();
            var key = (documentId.ToLowerInvariant(), name.ToLowerInvariant());
            if (!session._timeSeries.TryGetValue(key, out var p))
                session._timeSeries[key] = p = new TimeSeries.PendingTimeSeries(name);
            return p;
        }

        public void Append(DateTime timestamp, double value, string? tag = null) => Pending().Append(timestamp, [value], tag);

        public void Append(DateTime timestamp, IEnumerable<double> values, string? tag = null) => Pending().Append(timestamp, values, tag);

        public void Increment(DateTime timestamp, double delta = 1) => Pending().Increment(timestamp, delta);

        public void Delete(DateTime? first = null, DateTime? last = null) => Pending().Delete(first, last);

        public async Task<IReadOnlyList<TimeSeries.TimeSeriesEntry>> GetAsync(DateTime? first = null, DateTime? last = null, int start = 0, int pageSize = int.MaxValue,
            CancellationToken cancellationToken = default)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new TimeSeries.GetTimeSeriesOperation.Command(documentId, name, first, last, start, pageSize), session.Database, cancellationToken)
                .ConfigureAwait(false);
        }
    }

    public Revisions.IRevisionsSessionOperations Revisions => _revisions ??= new SessionRevisions(this);

    private SessionRevisions? _revisions;

    /// <summary>An entity from a revision: not tracked (a revision is read-only), its identity property set.</summary>
    private T Detached<T>(JsonObject document)
    {
        string? id = (string?)(document["@metadata"] as JsonObject)?["@id"];
        var entity = WithoutMetadata(document).Deserialize<T>(Conventions.JsonSerializerOptions)!;
        if (id != null && entity != null)
            Conventions.IdentityProperty(entity.GetType())?.SetValue(entity, id);
        return entity;
    }

    /// <summary>Revisions read through this session.</summary>
    private sealed class SessionRevisions(AsyncDocumentSession session) : Revisions.IRevisionsSessionOperations
    {
        private async Task<IReadOnlyList<JsonObject?>> Read(string query, CancellationToken cancellationToken)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new Revisions.GetRevisionsCommand(query), session.Database, cancellationToken).ConfigureAwait(false);
        }

        private static string Page(string id, int start, int pageSize) =>
            string.Create(System.Globalization.CultureInfo.InvariantCulture, $"id={Uri.EscapeDataString(id)}&start={start}&pageSize={pageSize}");

        public async Task<IReadOnlyList<T>> GetForAsync<T>(string id, int start = 0, int pageSize = 25, CancellationToken cancellationToken = default) =>
            (await Read(Page(id, start, pageSize), cancellationToken).ConfigureAwait(false)).OfType<JsonObject>().Select(session.Detached<T>).ToList();

        public async Task<IReadOnlyList<JsonObject>> GetMetadataForAsync(string id, int start = 0, int pageSize = 25, CancellationToken cancellationToken = default) =>
            (await Read(Page(id, start, pageSize) + "&metadataOnly=true", cancellationToken).ConfigureAwait(false))
                .OfType<JsonObject>().Select(d => (JsonObject)d["@metadata"]!.DeepClone()).ToList();

        public async Task<T?> GetAsync<T>(string changeVector, CancellationToken cancellationToken = default) =>
            (await Read("changeVector=" + Uri.EscapeDataString(changeVector), cancellationToken).ConfigureAwait(false)) is [JsonObject d] ? session.Detached<T>(d) : default;

        public async Task<T?> GetAsync<T>(string id, DateTime before, CancellationToken cancellationToken = default) =>
            (await Read($"id={Uri.EscapeDataString(id)}&before={Uri.EscapeDataString(before.ToUniversalTime().ToString("o", System.Globalization.CultureInfo.InvariantCulture))}", cancellationToken)
                .ConfigureAwait(false)) is [JsonObject d] ? session.Detached<T>(d) : default;

        public async Task<long> GetCountForAsync(string id, CancellationToken cancellationToken = default)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new Revisions.GetRevisionsCountCommand(id), session.Database, cancellationToken).ConfigureAwait(false);
        }

        public void ForceRevisionCreationFor<T>(T entity)
        {
            string id = session.Tracked(entity).Id;
            if (!session._forcedRevisions.Contains(id, StringComparer.OrdinalIgnoreCase))
                session._forcedRevisions.Add(id);
        }
    }

    public IAttachmentsSessionOperations Attachments => _attachments ??= new SessionAttachments(this);

    private SessionAttachments? _attachments;

    /// <summary>After a save, a tracked document follows its attachment changes: its change vector and <c>@attachments</c>.</summary>
    private void ApplyAttachmentResult(JsonObject r)
    {
        string? type = (string?)r["Type"];
        string? cv = (string?)r["DocumentChangeVector"];
        void Update(string? id, Action<JsonArray> change)
        {
            if (id == null || !_byId.TryGetValue(id, out var info))
                return;
            if (cv != null)
            {
                info.ChangeVector = cv;
                info.Metadata["@change-vector"] = cv;
            }
            var list = info.Metadata["@attachments"] as JsonArray ?? [];
            change(list);
            info.Metadata["@attachments"] = list.Count > 0 ? list : null;
            if (list.Count == 0)
                info.Metadata.Remove("@attachments");
            info.Original = ToDocument(info).ToJsonString();
        }
        static void Remove(JsonArray list, string? name)
        {
            for (int i = list.Count - 1; i >= 0; i--)
                if (string.Equals((string?)list[i]?["Name"], name, StringComparison.OrdinalIgnoreCase))
                    list.RemoveAt(i);
        }
        void Add(JsonArray list, string? name)
        {
            Remove(list, name);
            list.Add(new JsonObject { ["Name"] = name, ["Hash"] = (string?)r["Hash"], ["ContentType"] = (string?)r["ContentType"], ["Size"] = (long?)r["Size"] });
        }
        switch (type)
        {
            case "AttachmentPUT":
            case "AttachmentCOPY":
                Update((string?)r["Id"], l => Add(l, (string?)r["Name"]));
                break;
            case "AttachmentDELETE":
                Update((string?)r["@id"], l => Remove(l, (string?)r["Name"]));
                break;
            case "AttachmentMOVE":
                string? source = (string?)r["Id"], destination = (string?)r["DestinationId"];
                if (!string.Equals(source, destination, StringComparison.OrdinalIgnoreCase))
                    cv = null; // the answer carries the destination's change vector
                Update(source, l => Remove(l, (string?)r["Name"]));
                cv = (string?)r["DocumentChangeVector"];
                Update(destination, l => Add(l, (string?)r["DestinationName"]));
                break;
        }
    }

    /// <summary>The attachments of this session: commands queued for SaveChanges, reads sent at once.</summary>
    private sealed class SessionAttachments(AsyncDocumentSession session) : IAttachmentsSessionOperations
    {
        private void Queue(JsonObject command)
        {
            session.ThrowIfDisposed();
            session._attachmentCommands.Add(command);
        }

        public void Store(string documentId, string name, Stream stream, string? contentType = null)
        {
            ArgumentException.ThrowIfNullOrEmpty(documentId);
            ArgumentException.ThrowIfNullOrEmpty(name);
            ArgumentNullException.ThrowIfNull(stream);
            if (session._attachmentStreams.Contains(stream))
                throw new InvalidOperationException("This stream is already stored as another attachment in this session.");
            Queue(new JsonObject { ["Id"] = documentId, ["Name"] = name, ["ContentType"] = contentType, ["ChangeVector"] = null, ["Type"] = "AttachmentPUT" });
            session._attachmentStreams.Add(stream);
        }

        public void Store(object entity, string name, Stream stream, string? contentType = null) => Store(session.Tracked(entity).Id, name, stream, contentType);

        public void Delete(string documentId, string name) =>
            Queue(new JsonObject { ["Id"] = documentId, ["Name"] = name, ["ChangeVector"] = null, ["Type"] = "AttachmentDELETE" });

        public void Copy(string sourceDocumentId, string sourceName, string destinationDocumentId, string destinationName) =>
            Queue(new JsonObject { ["Id"] = sourceDocumentId, ["Name"] = sourceName, ["DestinationId"] = destinationDocumentId, ["DestinationName"] = destinationName, ["Type"] = "AttachmentCOPY" });

        public void Move(string sourceDocumentId, string sourceName, string destinationDocumentId, string destinationName) =>
            Queue(new JsonObject { ["Id"] = sourceDocumentId, ["Name"] = sourceName, ["DestinationId"] = destinationDocumentId, ["DestinationName"] = destinationName, ["Type"] = "AttachmentMOVE" });

        public void Rename(string documentId, string name, string newName) => Move(documentId, name, documentId, newName);

        public async Task<AttachmentResult?> GetAsync(string documentId, string name, CancellationToken cancellationToken = default)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new GetAttachmentOperation(documentId, name).GetCommand(session.Conventions), session.Database, cancellationToken).ConfigureAwait(false);
        }

        public async Task<bool> ExistsAsync(string documentId, string name, CancellationToken cancellationToken = default)
        {
            session.ThrowIfDisposed();
            session.CountRequest();
            return await session.Store.Executor.ExecuteAsync(new HeadAttachmentCommand(documentId, name), session.Database, cancellationToken).ConfigureAwait(false);
        }

        public IReadOnlyList<AttachmentName> GetNames(object entity) => AttachmentNames.Of(session.Tracked(entity).Metadata);
    }

    /// <summary>The compare-exchange values a cluster-wide session tracks: created, read (and maybe changed) and deleted.</summary>
    private sealed class ClusterTransactionOperations(AsyncDocumentSession session) : IClusterTransactionOperations
    {
        private sealed class Tracked(string key, long index, object? value, Type type, string? original)
        {
            public string Key { get; } = key;
            public long Index { get; set; } = index;
            public object? Value { get; } = value; // the CompareExchangeValue<T>
            public Type Type { get; } = type;
            public string? Original { get; set; } = original; // serialized value as read; null for a new one
            public bool Deleted { get; set; }
        }

        private readonly Dictionary<string, Tracked> _values = new(StringComparer.OrdinalIgnoreCase);

        private DocumentConventions Conventions => session.Conventions;

        public CompareExchangeValue<T> CreateCompareExchangeValue<T>(string key, T value)
        {
            ArgumentException.ThrowIfNullOrEmpty(key);
            if (_values.ContainsKey(key))
                throw new InvalidOperationException($"The session already tracks compare-exchange value '{key}'.");
            var v = new CompareExchangeValue<T>(key, 0, value);
            _values[key] = new Tracked(key, 0, v, typeof(T), null);
            return v;
        }

        public async Task<CompareExchangeValue<T>?> GetCompareExchangeValueAsync<T>(string key, CancellationToken cancellationToken = default)
        {
            ArgumentException.ThrowIfNullOrEmpty(key);
            if (_values.TryGetValue(key, out var tracked))
                return tracked.Deleted ? null : (CompareExchangeValue<T>?)tracked.Value;
            session.ThrowIfDisposed();
            session.CountRequest();
            var value = await session.Store.Executor.ExecuteAsync(new GetCompareExchangeValueOperation<T>(key).GetCommand(Conventions), session.Database, cancellationToken).ConfigureAwait(false);
            if (value != null)
                _values[key] = new Tracked(value.Key, value.Index, value, typeof(T), Serialize(value.Value, typeof(T)));
            return value;
        }

        public void DeleteCompareExchangeValue(string key, long index)
        {
            ArgumentException.ThrowIfNullOrEmpty(key);
            if (!_values.TryGetValue(key, out var tracked))
                _values[key] = tracked = new Tracked(key, index, null, typeof(object), null);
            tracked.Index = index;
            tracked.Deleted = true;
        }

        private string Serialize(object? value, Type type) => JsonSerializer.Serialize(value, type, Conventions.JsonSerializerOptions);

        private static object? ValueOf(Tracked t) => t.Value?.GetType().GetProperty("Value")!.GetValue(t.Value);

        public bool HasChanges => _values.Values.Any(t => t.Deleted || t.Original == null || Serialize(ValueOf(t), t.Type) != t.Original);

        /// <summary>The batch commands for every new, changed and deleted value.</summary>
        public List<JsonObject> Commands()
        {
            var list = new List<JsonObject>();
            foreach (var t in _values.Values)
            {
                if (t.Deleted)
                {
                    list.Add(new JsonObject { ["Id"] = t.Key, ["Index"] = t.Index, ["Type"] = "CompareExchangeDELETE" });
                    continue;
                }
                string now = Serialize(ValueOf(t), t.Type);
                if (t.Original != null && now == t.Original)
                    continue;
                list.Add(new JsonObject
                {
                    ["Id"] = t.Key,
                    ["Index"] = t.Index,
                    ["Document"] = new JsonObject { ["Object"] = JsonNode.Parse(now) },
                    ["Type"] = "CompareExchangePUT",
                });
            }
            return list;
        }

        /// <summary>After a successful save: values take their new index, deleted ones are forgotten.</summary>
        public void Saved(JsonArray results)
        {
            foreach (var r in results.OfType<JsonObject>())
            {
                string? type = (string?)r["Type"];
                if (type is not ("CompareExchangePUT" or "CompareExchangeDELETE") || (string?)r["Key"] is not { } key || !_values.TryGetValue(key, out var t))
                    continue;
                if (t.Deleted)
                {
                    _values.Remove(key);
                    continue;
                }
                t.Index = (long?)r["Index"] ?? t.Index;
                t.Value?.GetType().GetProperty("Index")!.SetValue(t.Value, t.Index);
                t.Original = Serialize(ValueOf(t), t.Type);
            }
        }
    }

    /// <summary>The counters of one document, through its session.</summary>
    private sealed class SessionDocumentCounters(AsyncDocumentSession session, string documentId) : ISessionDocumentCounters
    {
        public void Increment(string counter, long delta = 1) => session.AddCounterOperation(documentId, CounterOperationType.Increment, counter, delta);

        public void Delete(string counter) => session.AddCounterOperation(documentId, CounterOperationType.Delete, counter, 0);

        public async Task<long?> GetAsync(string counter, CancellationToken cancellationToken = default)
        {
            var details = await session.GetCountersAsync(documentId, [counter], cancellationToken).ConfigureAwait(false);
            return details.Count > 0 ? details[0]?.TotalValue : null;
        }

        public async Task<IReadOnlyDictionary<string, long>> GetAllAsync(CancellationToken cancellationToken = default) =>
            (await session.GetCountersAsync(documentId, [], cancellationToken).ConfigureAwait(false))
                .Where(d => d != null).ToDictionary(d => d!.CounterName, d => d!.TotalValue, StringComparer.OrdinalIgnoreCase);
    }

    public bool HasChanged(object entity) => _byEntity.TryGetValue(entity, out var info) && IsChanged(info);

    private bool IsChanged(DocumentInfo info) => info.IsNew || info.HasConcurrencyCheck || ToDocument(info).ToJsonString() != info.Original;

    public JsonObject GetMetadataFor<T>(T entity) => Tracked(entity).Metadata;

    public string? GetChangeVectorFor<T>(T entity) => Tracked(entity).ChangeVector;

    public string GetDocumentId(object entity) => Tracked(entity).Id;

    public bool IsLoaded(string id) => _byId.ContainsKey(id);

    private DocumentInfo Tracked<T>(T entity)
    {
        ArgumentNullException.ThrowIfNull(entity);
        return _byEntity.TryGetValue(entity, out var info) ? info : throw new InvalidOperationException($"{entity.GetType().Name} is not tracked by this session.");
    }

    public void Evict<T>(T entity)
    {
        ArgumentNullException.ThrowIfNull(entity);
        if (_byEntity.TryGetValue(entity, out var info))
        {
            Untrack(info);
            _deletes.Remove(info.Id);
        }
    }

    public void Clear()
    {
        _byId.Clear();
        _byEntity.Clear();
        _deletes.Clear();
        _included.Clear();
    }

    private void ThrowIfDisposed() => ObjectDisposedException.ThrowIf(_disposed, this);

    public void Dispose() => _disposed = true;

    /// <summary>What the session knows about one tracked document.</summary>
    private sealed class DocumentInfo(string id, object entity, JsonObject metadata)
    {
        public string Id { get; } = id;

        public object Entity { get; } = entity;

        public JsonObject Metadata { get; } = metadata;

        public string? ChangeVector { get; set; }

        /// <summary>Document JSON as of load or last save (null for a new entity).</summary>
        public string? Original { get; set; }

        public bool IsNew { get; set; }

        /// <summary>A change vector the caller gave explicitly for the next save (Store with change vector).</summary>
        public bool HasConcurrencyCheck { get; set; }

        public string? ConcurrencyCheck { get; set; }
    }
}
