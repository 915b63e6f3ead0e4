using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Commands;
using RavenLite.Client.Exceptions;

namespace RavenLite.Client.Session;

/// <summary>
/// The unit of work (see <see cref="IAsyncDocumentSession"/>). Invariants:
/// 1. One tracked entity instance per id (case-insensitive), and one id per tracked instance.
/// 2. A tracked entity's <see cref="DocumentInfo.Original"/> is its document JSON as of load or
///    last save; it is sent again only when its serialization differs (change tracking).
/// 3. Every request goes through <see cref="CountRequest"/>, which enforces the request guard.
/// Not thread-safe.
/// </summary>
internal sealed partial class AsyncDocumentSession : IAsyncDocumentSession, IAsyncAdvancedSessionOperations
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
