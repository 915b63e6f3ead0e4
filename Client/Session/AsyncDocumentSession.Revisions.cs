using System.Text.Json;
using System.Text.Json.Nodes;

namespace RavenLite.Client.Session;

/// <summary>Revisions: reads of a document's past versions, and forced revisions queued for SaveChanges.</summary>
internal sealed partial class AsyncDocumentSession
{
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
}
