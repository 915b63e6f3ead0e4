using System.Text.Json;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Patching;

/// <summary>A patch: JavaScript run on the document (<c>this</c>), with <c>args.name</c> (or <c>$name</c>) values.</summary>
public sealed class PatchRequest(string script, IReadOnlyDictionary<string, object?>? values = null)
{
    /// <summary>The script.</summary>
    public string Script { get; } = script;

    /// <summary>Its arguments.</summary>
    public IReadOnlyDictionary<string, object?> Values { get; } = values ?? new Dictionary<string, object?>();

    internal JsonObject ToJson(DocumentConventions conventions)
    {
        var values = new JsonObject();
        foreach (var (k, v) in Values)
            values[k] = JsonSerializer.SerializeToNode(v, conventions.JsonSerializerOptions);
        return new JsonObject { [nameof(Script)] = Script, [nameof(Values)] = values };
    }
}

/// <summary>What a patch did.</summary>
public enum PatchStatus
{
    /// <summary>There was no document (and none was created).</summary>
    DocumentDoesNotExist,

    /// <summary>The document was created from the patch-if-missing script.</summary>
    Created,

    /// <summary>The document changed.</summary>
    Patched,

    /// <summary>Skipped: the change vector did not match.</summary>
    Skipped,

    /// <summary>The script left the document as it was.</summary>
    NotModified,
}

/// <summary>
/// <c>PATCH /databases/{db}/docs?id=</c>: patches one document in its own transaction (<paramref name="patchIfMissing"/>
/// runs on an empty document when it does not exist). A script that fails is a 400 naming its line; nothing is written.
/// </summary>
public sealed class PatchOperation(string id, PatchRequest patch, PatchRequest? patchIfMissing = null, string? changeVector = null) : IMaintenanceOperation<PatchStatus>
{
    /// <inheritdoc />
    public RavenCommand<PatchStatus> GetCommand(DocumentConventions conventions) => new Command(id, patch.ToJson(conventions), patchIfMissing?.ToJson(conventions), changeVector);

    private sealed class Command(string id, JsonObject patch, JsonObject? patchIfMissing, string? changeVector) : RavenCommand<PatchStatus>
    {
        public override bool IsExpectedStatus(int status) => status == 404;

        public override HttpRequestMessage CreateRequest(string? database)
        {
            var body = new JsonObject { ["Patch"] = patch?.DeepClone(), ["PatchIfMissing"] = patchIfMissing?.DeepClone() }; // copies: a request made again (failover) takes them too
            var request = new HttpRequestMessage(HttpMethod.Patch, $"{DatabasePath(database)}/docs?id={Uri.EscapeDataString(id)}") { Content = JsonContent(body) };
            if (changeVector != null)
                request.Headers.TryAddWithoutValidation("If-Match", "\"" + changeVector + "\"");
            return request;
        }

        public override async Task<PatchStatus> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            ArgumentNullException.ThrowIfNull(response);
            if ((int)response.StatusCode == 404)
                return PatchStatus.DocumentDoesNotExist;
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return Enum.TryParse<PatchStatus>((string?)json["Status"], out var s) ? s : throw new Exceptions.RavenException("The patch answered no Status.");
        }
    }
}
