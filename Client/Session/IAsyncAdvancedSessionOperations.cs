using System.Text.Json.Nodes;
using RavenLite.Client.Linq;

namespace RavenLite.Client.Session;

/// <summary>The less common session operations (<c>session.Advanced</c>).</summary>
public interface IAsyncAdvancedSessionOperations
{
    /// <summary>
    /// Makes every later SaveChanges wait, after the server commits, until <paramref name="replicas"/> replication
    /// destinations (or a majority) have the batch; past <paramref name="timeout"/> (default 15 s) it throws
    /// <see cref="Exceptions.RavenTimeoutException"/> — the write itself is stored — unless <paramref name="throwOnTimeout"/> is false.
    /// </summary>
    void WaitForReplicationAfterSaveChanges(TimeSpan? timeout = null, bool throwOnTimeout = true, int replicas = 1, bool majority = false);

    /// <summary>Requests this session has made.</summary>
    int NumberOfRequests { get; }

    /// <summary>Requests allowed before the session throws; defaults to the conventions' value.</summary>
    int MaxNumberOfRequestsPerSession { get; set; }

    /// <summary>When true, saves send change vectors so concurrent changes fail. Defaults to the conventions' value.</summary>
    bool UseOptimisticConcurrency { get; set; }

    /// <summary>True when <see cref="IAsyncDocumentSession.SaveChangesAsync"/> would send anything.</summary>
    bool HasChanges { get; }

    /// <summary>True when a tracked entity differs from what was loaded or last saved.</summary>
    bool HasChanged(object entity);

    /// <summary>The metadata of a tracked entity (mutable: changes are saved with the entity).</summary>
    JsonObject GetMetadataFor<T>(T entity);

    /// <summary>The change vector of a tracked entity (null before its first save).</summary>
    string? GetChangeVectorFor<T>(T entity);

    /// <summary>The id of a tracked entity.</summary>
    string GetDocumentId(object entity);

    /// <summary>True when the session tracks <paramref name="id"/>.</summary>
    bool IsLoaded(string id);

    /// <summary>Stops tracking an entity: later loads fetch it again; pending changes to it are dropped.</summary>
    void Evict<T>(T entity);

    /// <summary>Stops tracking everything, including pending deletes.</summary>
    void Clear();

    /// <summary>How SaveChanges is applied (set when the session is opened).</summary>
    TransactionMode TransactionMode { get; }

    /// <summary>Compare-exchange values saved with this session; only in a <see cref="TransactionMode.ClusterWide"/> session.</summary>
    IClusterTransactionOperations ClusterTransaction { get; }

    /// <summary>The attachments of documents: stores, deletes, copies and moves saved with SaveChanges; reads at once.</summary>
    Attachments.IAttachmentsSessionOperations Attachments { get; }

    /// <summary>The revisions of documents: read at once; forced revisions made with SaveChanges.</summary>
    Revisions.IRevisionsSessionOperations Revisions { get; }

    /// <summary>Patches a document with SaveChanges, in its transaction (the script runs on the server; <paramref name="patchIfMissing"/> on an empty document when it does not exist).</summary>
    void Patch(string id, Patching.PatchRequest patch, Patching.PatchRequest? patchIfMissing = null);

    /// <summary>Adds <paramref name="delta"/> to the number at <paramref name="path"/> (0 when absent) with SaveChanges.</summary>
    void Increment(string id, string path, long delta);

    /// <summary>A raw RQL query with <c>$name</c> parameters.</summary>
    IAsyncRawDocumentQuery<T> AsyncRawQuery<T>(string rql);

    /// <summary>Deferred loads: every pending lazy operation (these, and queries' <c>LazilyAsync</c>/<c>CountLazilyAsync</c>) goes in one request when a value is first asked for.</summary>
    Lazy.IAsyncLazySessionOperations Lazily { get; }

    /// <summary>Runs the pending lazy operations now.</summary>
    Lazy.IAsyncEagerSessionOperations Eagerly { get; }

    /// <summary>
    /// Streams the documents whose id starts with <paramref name="startsWith"/> (id order; <paramref name="matches"/> and
    /// <paramref name="exclude"/> are <c>*</c>/<c>?</c> patterns separated by <c>|</c> on the rest of the id), read as the
    /// server sends them: any number, in constant memory. Results are not tracked by the session.
    /// </summary>
    Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(string startsWith, string? matches = null, int start = 0, int pageSize = int.MaxValue,
        string? startAfter = null, string? exclude = null, CancellationToken cancellationToken = default);

    /// <summary>Streams every result of a LINQ query (its paging applies; the index is not waited for). Not tracked.</summary>
    Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IQueryable<T> query, CancellationToken cancellationToken = default);

    /// <summary>Streams every result of a LINQ query; <paramref name="stats"/> is filled before the first result.</summary>
    Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IQueryable<T> query, out Streaming.StreamQueryStatistics stats, CancellationToken cancellationToken = default);

    /// <summary>Streams every result of a raw RQL query (with its parameters). Not tracked.</summary>
    Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IAsyncRawDocumentQuery<T> query, CancellationToken cancellationToken = default);

    /// <summary>Streams every result of a raw RQL query; <paramref name="stats"/> is filled before the first result.</summary>
    Task<IAsyncEnumerator<Streaming.StreamResult<T>>> StreamAsync<T>(IAsyncRawDocumentQuery<T> query, out Streaming.StreamQueryStatistics stats, CancellationToken cancellationToken = default);
}
