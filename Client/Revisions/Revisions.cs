using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Revisions;

/// <summary>How one collection keeps revisions.</summary>
public sealed class RevisionsCollectionConfiguration
{
    /// <summary>No revisions for the collection.</summary>
    public bool Disabled { get; set; }

    /// <summary>Keep at most this many revisions per document (null: no limit).</summary>
    public long? MinimumRevisionsToKeep { get; set; }

    /// <summary>Revisions older than this may be removed (null: no age limit).</summary>
    public TimeSpan? MinimumRevisionAgeToKeep { get; set; }

    /// <summary>Deleting a document deletes its revisions.</summary>
    public bool PurgeOnDelete { get; set; }

    internal JsonObject ToJson() => new()
    {
        [nameof(Disabled)] = Disabled,
        [nameof(MinimumRevisionsToKeep)] = MinimumRevisionsToKeep,
        [nameof(MinimumRevisionAgeToKeep)] = MinimumRevisionAgeToKeep?.ToString("c", CultureInfo.InvariantCulture),
        [nameof(PurgeOnDelete)] = PurgeOnDelete,
    };
}

/// <summary>A database's revisions configuration: a default and per-collection entries.</summary>
public sealed class RevisionsConfiguration
{
    /// <summary>For collections without an entry (null: none keep revisions).</summary>
    public RevisionsCollectionConfiguration? Default { get; set; }

    /// <summary>Per-collection entries.</summary>
    public Dictionary<string, RevisionsCollectionConfiguration> Collections { get; } = new(StringComparer.OrdinalIgnoreCase);
}

/// <summary><c>POST /databases/{db}/admin/revisions/config</c>: sets the revisions configuration.</summary>
public sealed class ConfigureRevisionsOperation(RevisionsConfiguration configuration) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new Command(configuration);

    private sealed class Command(RevisionsConfiguration configuration) : RavenCommand<long>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var collections = new JsonObject();
            foreach (var (name, c) in configuration.Collections)
                collections[name] = c.ToJson();
            var body = new JsonObject { ["Default"] = configuration.Default?.ToJson(), ["Collections"] = collections };
            return new HttpRequestMessage(HttpMethod.Post, DatabasePath(database) + "/admin/revisions/config") { Content = JsonContent(body) };
        }

        public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            (long?)(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))["RaftCommandIndex"] ?? 0;
    }
}

/// <summary>
/// <c>POST /databases/{db}/revisions/revert</c>: every document with revisions goes back to its newest revision at or
/// before <paramref name="time"/> (documents created since are deleted). Runs as an operation: answers its id
/// (wait with <see cref="OperationCompletion.WaitForCompletionAsync"/>).
/// </summary>
public sealed class RevertRevisionsOperation(DateTime time, IEnumerable<string>? collections = null) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new Command(time, collections?.ToList());

    private sealed class Command(DateTime time, List<string>? collections) : RavenCommand<long>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            var body = new JsonObject { ["Time"] = time.ToUniversalTime().ToString("o", CultureInfo.InvariantCulture), ["WindowInSec"] = 0 };
            if (collections != null)
                body["Collections"] = new JsonArray(collections.Select(c => (JsonNode?)c).ToArray());
            return new HttpRequestMessage(HttpMethod.Post, DatabasePath(database) + "/revisions/revert") { Content = JsonContent(body) };
        }

        public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            (long?)(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))["OperationId"] ?? throw new Exceptions.RavenException("The server started no operation.");
    }
}

/// <summary>The revisions of documents in a session (<c>session.Advanced.Revisions</c>).</summary>
public interface IRevisionsSessionOperations
{
    /// <summary>A document's revisions, newest first.</summary>
    Task<IReadOnlyList<T>> GetForAsync<T>(string id, int start = 0, int pageSize = 25, CancellationToken cancellationToken = default);

    /// <summary>The metadata of a document's revisions, newest first.</summary>
    Task<IReadOnlyList<JsonObject>> GetMetadataForAsync(string id, int start = 0, int pageSize = 25, CancellationToken cancellationToken = default);

    /// <summary>The revision with this change vector, or default when there is none.</summary>
    Task<T?> GetAsync<T>(string changeVector, CancellationToken cancellationToken = default);

    /// <summary>The document as it was at <paramref name="before"/> (its newest revision written then or earlier), or default.</summary>
    Task<T?> GetAsync<T>(string id, DateTime before, CancellationToken cancellationToken = default);

    /// <summary>How many revisions the document has.</summary>
    Task<long> GetCountForAsync(string id, CancellationToken cancellationToken = default);

    /// <summary>Makes a revision of the entity's document with the next SaveChanges, whatever the configuration.</summary>
    void ForceRevisionCreationFor<T>(T entity);
}

/// <summary><c>GET /databases/{db}/revisions?..</c>: revisions as documents (with <c>@metadata</c>), null where missing.</summary>
internal sealed class GetRevisionsCommand(string query) : RavenCommand<IReadOnlyList<JsonObject?>>
{
    public override bool IsExpectedStatus(int status) => status == 404;

    public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get, $"{DatabasePath(database)}/revisions?{query}");

    public override async Task<IReadOnlyList<JsonObject?>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(response);
        if ((int)response.StatusCode == 404)
            return [null];
        var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
        return (json["Results"] as JsonArray ?? []).Select(n => n as JsonObject).ToList();
    }
}

/// <summary><c>GET /databases/{db}/revisions/count?id=</c>.</summary>
internal sealed class GetRevisionsCountCommand(string id) : RavenCommand<long>
{
    public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get, $"{DatabasePath(database)}/revisions/count?id={Uri.EscapeDataString(id)}");

    public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
        (long?)(await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false))["RevisionsCount"] ?? 0;
}
