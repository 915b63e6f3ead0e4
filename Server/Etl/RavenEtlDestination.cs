using System.Net.Http.Headers;
using RavenLite.Server.Documents;
using RavenLite.Server.Replication;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Etl;

/// <summary>
/// RavenDB ETL's loader (docs/etl.md "RavenDB ETL"): a batch is one <c>POST /databases/{db}/bulk_docs</c> to the
/// connection string's database (its URLs tried in order), one transaction there. A document loaded to its own
/// collection keeps its id (plus the transformation's postfix); one loaded to another collection gets
/// <c>{id}/{collection}/{etag}-{node}</c>, so the same change loads under the same id however often it is replayed,
/// and every earlier load of the document (prefix <c>{id}/</c>) is deleted first.
/// </summary>
internal sealed class RavenEtlDestination(DocumentsStorage documents, RavenConnectionString destination, EtlTransformation transformation, string nodeTag, HttpClient http, TimeSpan timeout) : IEtlDestination
{
    private readonly IReadOnlyList<string> _targets = EtlScript.Targets(transformation.Script);

    /// <summary>The URL that answered last (tried first next time).</summary>
    public string? ConnectedUrl { get; private set; }

    public IEtlBatch NewBatch(Transaction tx) => new EtlItemsBatch(tx, LoadAsync);

    private async Task LoadAsync(IReadOnlyList<EtlItem> items, Transaction tx, CancellationToken cancellation)
    {
        var attachments = new List<byte[]>();
        var body = new ArrayBufferWriter<byte>(64 << 10);
        using (var w = new Utf8JsonWriter(body))
        {
            w.WriteStartObject();
            w.WriteStartArray("Commands");
            foreach (var item in items)
                WriteCommands(w, item, tx, attachments);
            w.WriteEndArray();
            w.WriteEndObject();
        }
        if (body.WrittenCount <= "{\"Commands\":[]}".Length)
            return;
        await SendAsync(body.WrittenMemory, attachments, cancellation).ConfigureAwait(false);
    }

    private void WriteCommands(Utf8JsonWriter w, EtlItem item, Transaction tx, List<byte[]> attachments)
    {
        string own = item.Id + transformation.DocumentIdPostfix;
        var docs = item.Loads.OfType<EtlLoad.RavenDocument>().ToList();
        bool loadsOwn = docs.Any(d => d.Collection.Equals(item.Collection, StringComparison.OrdinalIgnoreCase));
        bool loadsElsewhere = _targets.Any(t => !t.Equals(item.Collection, StringComparison.OrdinalIgnoreCase));
        if (item.DeletesPrevious)
        {
            if (loadsElsewhere)
                Delete(w, item.Id + "/", prefixed: true);
            // A document no longer loaded to its own collection (deleted, or filtered out now) leaves it; one loaded
            // with attachments, counters or series is replaced whole so it carries only those.
            if (!loadsOwn || docs.Any(d => d.Collection.Equals(item.Collection, StringComparison.OrdinalIgnoreCase) && HasExtensions(d)))
                Delete(w, own, prefixed: false);
        }
        var perCollection = new Dictionary<string, int>(StringComparer.OrdinalIgnoreCase);
        foreach (var doc in docs)
        {
            string id;
            if (doc.Collection.Equals(item.Collection, StringComparison.OrdinalIgnoreCase))
                id = own;
            else
            {
                int n = perCollection[doc.Collection] = perCollection.GetValueOrDefault(doc.Collection) + 1;
                string postfix = transformation.DocumentIdPostfix is { } p ? p.TrimStart('/') + "/" : "";
                id = $"{item.Id}/{doc.Collection.ToLowerInvariant()}/{postfix}{item.Etag.ToString("D19", CultureInfo.InvariantCulture)}-{nodeTag}{(n > 1 ? "-" + n.ToString(CultureInfo.InvariantCulture) : "")}";
            }
            w.WriteStartObject();
            w.WriteString("Type", "PUT");
            w.WriteString("Id", id);
            w.WriteNull("ChangeVector");
            w.WritePropertyName("Document");
            w.WriteRawValue(doc.Json, skipInputValidation: true);
            w.WriteEndObject();
            WriteExtensions(w, id, item.Id, doc, tx, attachments);
        }
    }

    private static bool HasExtensions(EtlLoad.RavenDocument d) => d.Attachments.Count > 0 || d.Counters.Count > 0 || d.TimeSeries.Count > 0;

    private static void Delete(Utf8JsonWriter w, string id, bool prefixed)
    {
        w.WriteStartObject();
        w.WriteString("Type", "DELETE");
        w.WriteString("Id", id);
        w.WriteNull("ChangeVector");
        if (prefixed)
            w.WriteBoolean("IdPrefixed", true);
        w.WriteEndObject();
    }

    private void WriteExtensions(Utf8JsonWriter w, string id, string sourceId, EtlLoad.RavenDocument doc, Transaction tx, List<byte[]> attachments)
    {
        if (!HasExtensions(doc))
            return;
        var source = documents.Get(tx, sourceId);
        var extras = source == null ? null : DocumentExtras.Read(source.Json);
        foreach (var (name, sourceName) in doc.Attachments)
        {
            if (extras?.Attachments.TryGetValue(sourceName, out var info) != true || Attachments.AttachmentsStore.Find(tx, info!.Hash) is not { } content)
                continue;
            using var bytes = new MemoryStream((int)Math.Min(content.Size, int.MaxValue));
            Attachments.AttachmentsStore.CopyToAsync(tx, content.ContentId, 0, content.Size, bytes, CancellationToken.None).GetAwaiter().GetResult();
            attachments.Add(bytes.ToArray());
            w.WriteStartObject();
            w.WriteString("Type", "AttachmentPUT");
            w.WriteString("Id", id);
            w.WriteString("Name", name);
            w.WriteString("ContentType", info.ContentType);
            w.WriteNull("ChangeVector");
            w.WriteEndObject();
        }
        if (doc.Counters.Count > 0)
        {
            var key = documents.KeyOf(sourceId);
            w.WriteStartObject();
            w.WriteString("Type", "Counters");
            w.WriteString("Id", id);
            w.WriteStartObject("Counters");
            w.WriteString("DocumentId", id);
            w.WriteStartArray("Operations");
            foreach (string name in doc.Counters)
            {
                if (Counters.CountersStore.Get(tx, key, name) is not { } counter)
                    continue;
                w.WriteStartObject();
                w.WriteString("Type", "Put");
                w.WriteString("CounterName", counter.Name);
                w.WriteNumber("Delta", counter.Value);
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
            w.WriteEndObject();
        }
        foreach (var (name, from, to) in doc.TimeSeries)
        {
            var key = documents.KeyOf(sourceId);
            var points = TimeSeries.TimeSeriesStore.Read(tx, key, name, from, to).ToList();
            if (points.Count == 0)
                continue;
            w.WriteStartObject();
            w.WriteString("Type", "TimeSeries");
            w.WriteString("Id", id);
            w.WriteStartObject("TimeSeries");
            w.WriteString("Name", name);
            w.WriteStartArray("Appends");
            foreach (var p in points)
            {
                w.WriteStartObject();
                w.WriteString("Timestamp", new DateTime(p.Milliseconds * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc).ToString("o", CultureInfo.InvariantCulture));
                w.WriteStartArray("Values");
                foreach (double v in p.Values)
                    w.WriteNumberValue(v);
                w.WriteEndArray();
                if (p.Tag != null)
                    w.WriteString("Tag", p.Tag);
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
            w.WriteEndObject();
        }
    }

    private async Task SendAsync(ReadOnlyMemory<byte> commands, List<byte[]> attachments, CancellationToken cancellation)
    {
        var urls = destination.TopologyDiscoveryUrls.OrderBy(u => u == ConnectedUrl ? 0 : 1).ToList();
        Exception? last = null;
        foreach (string url in urls)
        {
            using var request = new HttpRequestMessage(HttpMethod.Post, $"{url}/databases/{Uri.EscapeDataString(destination.Database)}/bulk_docs");
            var json = new ReadOnlyMemoryContent(commands);
            json.Headers.ContentType = new MediaTypeHeaderValue("application/json");
            if (attachments.Count == 0)
                request.Content = json;
            else
            {
                var multipart = new MultipartFormDataContent { { json, "main" } };
                int i = 0;
                foreach (var a in attachments)
                    multipart.Add(new ByteArrayContent(a), "attachment" + (i++).ToString(CultureInfo.InvariantCulture));
                request.Content = multipart;
            }
            using var timeoutSource = CancellationTokenSource.CreateLinkedTokenSource(cancellation);
            timeoutSource.CancelAfter(timeout);
            try
            {
                using var response = await http.SendAsync(request, timeoutSource.Token).ConfigureAwait(false);
                if (response.IsSuccessStatusCode)
                {
                    ConnectedUrl = url;
                    return;
                }
                string text = await response.Content.ReadAsStringAsync(cancellation).ConfigureAwait(false);
                last = new EtlLoadException($"{url} answered {(int)response.StatusCode} to the batch: {(text.Length > 500 ? text[..500] : text)}");
                if ((int)response.StatusCode is >= 400 and < 500 and not 404 and not 408 and not 429)
                    break; // the batch itself is refused: another node would refuse it too
            }
            catch (Exception e) when (e is HttpRequestException or IOException || (e is OperationCanceledException && !cancellation.IsCancellationRequested))
            {
                last = new EtlLoadException($"{url} did not take the batch: {e.Message}", e);
            }
        }
        throw last ?? new EtlLoadException("The connection string names no URL.");
    }

    public void Dispose()
    {
    }
}

/// <summary>The destination did not take a batch (down, refusing, timed out): the batch is retried with back-off.</summary>
public sealed class EtlLoadException(string message, Exception? inner = null) : Exception(message, inner);
