using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary>
/// <c>POST /databases/{db}/bulk_docs</c> (docs/protocol.md §5): PUT, DELETE, Counters and (cluster-wide) compare-exchange
/// commands applied in one transaction; a failed change-vector check (409) applies none of them. Answers one result per command.
/// </summary>
public sealed class BatchCommand(JsonArray commands, bool clusterWide = false, IReadOnlyList<Stream>? attachmentStreams = null,
    Session.ReplicationBatchOptions? replication = null) : RavenCommand<JsonArray>
{
    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database)
    {
        // Written around the commands rather than putting them in a new object: a request made again (failing over to
        // another node) must not take them from the one before.
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new System.Text.Json.Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WritePropertyName("Commands");
            commands.WriteTo(w);
            if (clusterWide)
                w.WriteString("TransactionMode", "ClusterWide");
            w.WriteEndObject();
        }
        var content = new ByteArrayContent(buffer.WrittenSpan.ToArray());
        content.Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("application/json");
        var request = new HttpRequestMessage(HttpMethod.Post, DatabasePath(database) + "/bulk_docs" + (replication?.QueryString ?? "")) { Content = content };
        if (attachmentStreams is { Count: > 0 })
        {
            // The commands, then one part per AttachmentPUT in order, streamed (never buffered by the client).
            var multipart = new MultipartFormDataContent { { request.Content, "main" } };
            for (int i = 0; i < attachmentStreams.Count; i++)
            {
                var part = new StreamContent(attachmentStreams[i]);
                part.Headers.TryAddWithoutValidation("Command-Type", "AttachmentStream");
                multipart.Add(part, "attachment_" + i.ToString(System.Globalization.CultureInfo.InvariantCulture));
            }
            request.Content = multipart;
        }
        return request;
    }

    /// <inheritdoc />
    public override async Task<JsonArray> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
        return json["Results"] as JsonArray ?? throw new Exceptions.RavenException("bulk_docs answered without Results.");
    }
}
