using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Attachments;

/// <summary>An attachment as the server describes it: its document, name, content type, content hash (SHA-256, base64) and size.</summary>
public sealed record AttachmentDetails(string DocumentId, string Name, string ContentType, string Hash, long Size, string? ChangeVector);

/// <summary>An attachment's name, hash, content type and size, as listed in its document's <c>@attachments</c>.</summary>
public sealed record AttachmentName(string Name, string Hash, string ContentType, long Size);

/// <summary>An attachment's content (streamed from the server: read it, then dispose the result) and details.</summary>
public sealed class AttachmentResult(Stream stream, AttachmentDetails details, HttpResponseMessage response) : IDisposable
{
    /// <summary>The content, read as it arrives.</summary>
    public Stream Stream { get; } = stream;

    /// <summary>The attachment's details.</summary>
    public AttachmentDetails Details { get; } = details;

    /// <summary>Releases the connection.</summary>
    public void Dispose()
    {
        Stream.Dispose();
        response.Dispose();
    }
}

/// <summary>
/// The attachments of a session (<c>session.Advanced.Attachments</c>): stores, deletes, copies, moves and renames
/// are sent with SaveChangesAsync, in its transaction (streams as parts of one multipart request); reads are one request each.
/// </summary>
public interface IAttachmentsSessionOperations
{
    /// <summary>Stores <paramref name="stream"/> (read when the session saves) as attachment <paramref name="name"/> of the document.</summary>
    void Store(string documentId, string name, Stream stream, string? contentType = null);

    /// <summary>Stores an attachment of a tracked entity's document.</summary>
    void Store(object entity, string name, Stream stream, string? contentType = null);

    /// <summary>Deletes an attachment (nothing happens when there is none).</summary>
    void Delete(string documentId, string name);

    /// <summary>Copies an attachment to another document (or name); the content is shared, not copied.</summary>
    void Copy(string sourceDocumentId, string sourceName, string destinationDocumentId, string destinationName);

    /// <summary>Moves an attachment to another document (or name).</summary>
    void Move(string sourceDocumentId, string sourceName, string destinationDocumentId, string destinationName);

    /// <summary>Renames an attachment within its document.</summary>
    void Rename(string documentId, string name, string newName);

    /// <summary>The attachment's content and details, or null when it does not exist; dispose the result.</summary>
    Task<AttachmentResult?> GetAsync(string documentId, string name, CancellationToken cancellationToken = default);

    /// <summary>True when the document has the attachment.</summary>
    Task<bool> ExistsAsync(string documentId, string name, CancellationToken cancellationToken = default);

    /// <summary>The attachments of a tracked entity, from its metadata (no request).</summary>
    IReadOnlyList<AttachmentName> GetNames(object entity);
}

/// <summary><c>PUT /databases/{db}/attachments?id=&amp;name=&amp;contentType=</c>: streams a content to a document's attachment.</summary>
public sealed class PutAttachmentOperation(string documentId, string name, Stream stream, string? contentType = null, string? changeVector = null) : IMaintenanceOperation<AttachmentDetails>
{
    /// <inheritdoc />
    public RavenCommand<AttachmentDetails> GetCommand(DocumentConventions conventions) => new Command(documentId, name, stream, contentType, changeVector);

    private sealed class Command(string documentId, string name, Stream stream, string? contentType, string? changeVector) : RavenCommand<AttachmentDetails>
    {
        public override HttpRequestMessage CreateRequest(string? database)
        {
            string url = $"{DatabasePath(database)}/attachments?id={Uri.EscapeDataString(documentId)}&name={Uri.EscapeDataString(name)}";
            if (!string.IsNullOrEmpty(contentType))
                url += "&contentType=" + Uri.EscapeDataString(contentType);
            var request = new HttpRequestMessage(HttpMethod.Put, url) { Content = new StreamContent(stream) };
            if (changeVector != null)
                request.Headers.TryAddWithoutValidation("If-Match", "\"" + changeVector + "\"");
            return request;
        }

        public override async Task<AttachmentDetails> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var o = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return new AttachmentDetails((string?)o["DocumentId"] ?? "", (string?)o["Name"] ?? "", (string?)o["ContentType"] ?? "", (string?)o["Hash"] ?? "",
                (long?)o["Size"] ?? 0, (string?)o["ChangeVector"]);
        }
    }
}

/// <summary><c>GET /databases/{db}/attachments?id=&amp;name=</c>: an attachment's content and details (null when missing); dispose the result.</summary>
public sealed class GetAttachmentOperation(string documentId, string name) : IMaintenanceOperation<AttachmentResult?>
{
    /// <inheritdoc />
    public RavenCommand<AttachmentResult?> GetCommand(DocumentConventions conventions) => new Command(documentId, name);

    private sealed class Command(string documentId, string name) : RavenCommand<AttachmentResult?>
    {
        public override bool KeepsResponse => true;

        public override bool IsExpectedStatus(int status) => status == 404;

        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Get, $"{DatabasePath(database)}/attachments?id={Uri.EscapeDataString(documentId)}&name={Uri.EscapeDataString(name)}");

        public override async Task<AttachmentResult?> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            ArgumentNullException.ThrowIfNull(response);
            if ((int)response.StatusCode == 404)
                return null;
            string Header(string h) => response.Headers.TryGetValues(h, out var v) ? v.First() : "";
            var details = new AttachmentDetails(documentId, name, response.Content.Headers.ContentType?.ToString() ?? "", Header("Attachment-Hash"),
                long.TryParse(Header("Attachment-Size"), NumberStyles.None, CultureInfo.InvariantCulture, out long size) ? size : 0, response.Headers.ETag?.Tag.Trim('"'));
            var stream = await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false);
            return new AttachmentResult(stream, details, response);
        }
    }
}

/// <summary><c>DELETE /databases/{db}/attachments?id=&amp;name=</c>: removes an attachment.</summary>
public sealed class DeleteAttachmentOperation(string documentId, string name) : IMaintenanceOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) => new Command(documentId, name);

    private sealed class Command(string documentId, string name) : RavenCommand<bool>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Delete, $"{DatabasePath(database)}/attachments?id={Uri.EscapeDataString(documentId)}&name={Uri.EscapeDataString(name)}");

        public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(true);
    }
}

/// <summary><c>HEAD /databases/{db}/attachments?id=&amp;name=</c>: whether an attachment exists.</summary>
internal sealed class HeadAttachmentCommand(string documentId, string name) : RavenCommand<bool>
{
    public override bool IsExpectedStatus(int status) => status == 404;

    public override HttpRequestMessage CreateRequest(string? database) =>
        new(HttpMethod.Head, $"{DatabasePath(database)}/attachments?id={Uri.EscapeDataString(documentId)}&name={Uri.EscapeDataString(name)}");

    public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
        Task.FromResult((int)response.StatusCode != 404);
}

/// <summary>Reads <c>@attachments</c> of a document's metadata.</summary>
internal static class AttachmentNames
{
    public static List<AttachmentName> Of(JsonObject metadata) =>
        (metadata["@attachments"] as JsonArray ?? []).OfType<JsonObject>()
            .Select(a => new AttachmentName((string?)a["Name"] ?? "", (string?)a["Hash"] ?? "", (string?)a["ContentType"] ?? "", (long?)a["Size"] ?? 0)).ToList();
}
