using System.IO.Compression;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Indexing;

namespace RavenLite.Server.Smuggler;

/// <summary>What an export or import did, per kind (RavenDB's <c>SmugglerResult</c> counts, written as the operation's result).</summary>
public sealed class SmugglerCounts
{
    // Every kind a RavenDB result lists, at zero until counted (a kind an export left out reads 0, as RavenDB answers it).
    private readonly Dictionary<string, (long Read, long Skipped)> _counts = new(
        new[] { "Documents", "RevisionDocuments", "Indexes", "Identities", "CompareExchange", "CounterGroups", "TimeSeries", "Attachments" }
            .Select(k => KeyValuePair.Create(k, (0L, 0L))), StringComparer.Ordinal);

    /// <summary>Notes shown with the result (what was skipped and why).</summary>
    public List<string> Messages { get; } = [];

    /// <summary>Adds to a kind's count.</summary>
    public void Add(string kind, long read = 1, long skipped = 0)
    {
        var (r, s) = _counts.GetValueOrDefault(kind);
        _counts[kind] = (r + read, s + skipped);
    }

    /// <summary>The count of a kind.</summary>
    public long Read(string kind) => _counts.GetValueOrDefault(kind).Read;

    /// <summary>The result JSON: <c>{"$type", "Documents": {"ReadCount", "SkippedCount"}, ..., "Messages": [..]}</c>.</summary>
    public byte[] ToJson(string type)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(512);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteString("$type", type);
            foreach (var (kind, (read, skipped)) in _counts)
            {
                w.WriteStartObject(kind);
                w.WriteNumber("ReadCount", read);
                w.WriteNumber("SkippedCount", skipped);
                w.WriteNumber("ErroredCount", 0);
                w.WriteEndObject();
            }
            w.WriteStartArray(nameof(Messages));
            foreach (string m in Messages)
                w.WriteStringValue(m);
            w.WriteEndArray();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }
}

/// <summary>
/// Writes a database as a <c>.ravendbdump</c> (gzip JSON, RavenDB's smuggler layout; docs/format/dump.md) from one
/// storage snapshot: <c>BuildVersion</c>, <c>DatabaseRecord</c>, <c>Docs</c> (each document's attachment contents first,
/// as header objects followed by the raw bytes), <c>RevisionDocuments</c>, <c>Indexes</c> (static definitions),
/// <c>Identities</c>, <c>CompareExchange</c>, <c>CounterGroups</c>, and <c>RavenLiteTimeSeries</c> (entries as JSON: RavenDB's
/// own <c>TimeSeries</c> items are its binary segment encoding, which RavenLite does not write).
/// </summary>
public static class DatabaseExporter
{
    /// <summary>The BuildVersion written (RavenDB 7.2's protocol level).</summary>
    public const long BuildVersion = 72_000;

    private static readonly JsonWriterOptions WriterOptions = new() { SkipValidation = true, Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping };

    /// <summary>The database record's configurations (RavenDB's names): settings, client configuration, revisions, expiration, refresh, time series.</summary>
    private static void WriteConfigurations(Database db, Utf8JsonWriter w)
    {
        db.Record.WriteSettingsAndClient(w);
        db.WriteConfigurations(w);
    }

    // Kept whole: one snapshot and one writer through every section of the dump, in the order RavenDB's import
    // reads them; the sections share the writer, the snapshot and the counts.
    /// <summary>Writes the dump of <paramref name="db"/> to <paramref name="output"/> (the sections of <paramref name="types"/>, all when null); checks <paramref name="cancellation"/> between items.</summary>
    public static SmugglerCounts Export(Database db, Stream output, CancellationToken cancellation, ExportTypes? types = null)
    {
        types ??= ExportTypes.All;
        var counts = new SmugglerCounts();
        using var gzip = new GZipStream(output, CompressionLevel.Fastest, leaveOpen: true);
        using var w = new Utf8JsonWriter(gzip, WriterOptions);
        using var tx = db.Environment.ReadTransaction();
        w.WriteStartObject();
        w.WriteNumber("BuildVersion", BuildVersion);
        if (types.Has("DatabaseRecord"))
        {
            w.WriteStartObject("DatabaseRecord");
            w.WriteString("DatabaseName", db.Name);
            w.WriteBoolean("Encrypted", db.Record.Encrypted);
            w.WriteStartArray("UnusedDatabaseIds");
            w.WriteEndArray();
            WriteConfigurations(db, w);
            w.WriteEndObject();
        }

        w.WriteStartArray("Docs");
        var exported = new HashSet<string>(StringComparer.Ordinal);
        var withCounters = new List<StoredDocument>();
        var withSeries = new List<(StoredDocument Doc, IReadOnlyCollection<string> Names)>();
        foreach (var doc in types.Has("Documents") ? db.Documents.Scan(tx, null) : [])
        {
            cancellation.ThrowIfCancellationRequested();
            if (DocumentExtras.Read(doc.Json) is { } extras)
            {
                foreach (var a in types.Has("Attachments") ? extras.Attachments.Values : Enumerable.Empty<AttachmentInfo>())
                {
                    if (!exported.Add(a.Hash) || Attachments.AttachmentsStore.Find(tx, a.Hash) is not { } stored)
                        continue;
                    w.WriteStartObject();
                    w.WriteStartObject("@metadata");
                    w.WriteString("@export-type", "Attachment");
                    w.WriteEndObject();
                    w.WriteString("Hash", a.Hash);
                    w.WriteNumber("Size", stored.Size);
                    w.WriteString("Tag", db.Documents.NodeTag);
                    w.WriteEndObject();
                    w.Flush();
                    Attachments.AttachmentsStore.CopyToAsync(tx, stored.ContentId, 0, stored.Size, gzip, cancellation).GetAwaiter().GetResult();
                    counts.Add("Attachments");
                }
                if (extras.Counters.Count > 0 && types.Has("CounterGroups"))
                    withCounters.Add(doc);
                if (extras.TimeSeries.Count > 0 && types.Has("TimeSeries"))
                    withSeries.Add((doc, extras.TimeSeries.ToList()));
            }
            w.WriteRawValue(doc.Json, skipInputValidation: true);
            counts.Add("Documents");
            if (counts.Read("Documents") % 1024 == 0)
                w.Flush();
        }
        w.WriteEndArray();

        w.WriteStartArray("RevisionDocuments");
        foreach (var key in types.Has("RevisionDocuments") ? Revisions.RevisionsStore.DocumentKeys(tx) : [])
        {
            // Oldest first, as RavenDB's dumps list them (in etag order): an import stores them in that order.
            foreach (var revision in Enumerable.Reverse(Revisions.RevisionsStore.GetFor(tx, key, 0, int.MaxValue, db.Documents)))
            {
                w.WriteRawValue(revision.Json, skipInputValidation: true);
                counts.Add("RevisionDocuments");
            }
        }
        w.WriteEndArray();
        w.WriteStartArray("Tombstones");
        w.WriteEndArray();
        w.WriteStartArray("Conflicts");
        w.WriteEndArray();

        w.WriteStartArray("Indexes");
        foreach (var index in db.Indexes.All.Where(i => types.Has("Indexes") && !i.Definition.Type.StartsWith("Auto", StringComparison.Ordinal) && !i.Definition.Name.StartsWith(Indexing.IndexDefinition.ReplacementPrefix, StringComparison.OrdinalIgnoreCase)))
        {
            w.WriteStartObject();
            w.WriteString("Type", index.Definition.Type);
            w.WritePropertyName("IndexDefinition");
            IndexDefinitionJson.Write(w, index);
            w.WriteEndObject();
            counts.Add("Indexes");
        }
        w.WriteEndArray();

        w.WriteStartArray("Identities");
        foreach (var (name, value) in types.Has("Identities") ? DocumentsStorage.Identities(tx) : [])
        {
            w.WriteStartObject();
            w.WriteString("Key", name);
            w.WriteString("Value", value.ToString(System.Globalization.CultureInfo.InvariantCulture));
            w.WriteEndObject();
            counts.Add("Identities");
        }
        w.WriteEndArray();

        w.WriteStartArray("CompareExchange");
        foreach (var entry in types.Has("CompareExchange") ? CompareExchange.CompareExchangeStore.List(tx, "", 0, int.MaxValue) : [])
        {
            if (entry.Key.StartsWith(CompareExchange.CompareExchangeStore.AtomicGuardPrefix, StringComparison.OrdinalIgnoreCase))
                continue; // atomic guards follow their documents
            w.WriteStartObject();
            w.WriteString("Key", entry.Key);
            w.WriteString("Value", System.Text.Encoding.UTF8.GetString(entry.Json));
            w.WriteEndObject();
            counts.Add("CompareExchange");
        }
        w.WriteEndArray();

        w.WriteStartArray("CounterGroups");
        foreach (var doc in withCounters)
        {
            var counters = Counters.CountersStore.GetAll(tx, db.Documents.KeyOf(doc.Id));
            if (counters.Count == 0)
                continue;
            w.WriteStartObject();
            w.WriteString("DocId", doc.Id);
            w.WriteString("ChangeVector", doc.ChangeVector);
            w.WriteStartObject("Values");
            w.WriteStartArray("@dbIds");
            w.WriteStringValue(db.Documents.DatabaseId);
            w.WriteEndArray();
            w.WriteStartObject("@counters");
            foreach (var c in counters)
            {
                w.WriteStartArray(c.Name.ToLowerInvariant());
                w.WriteNumberValue(c.Value);
                w.WriteNumberValue(c.Version);
                w.WriteEndArray();
            }
            w.WriteEndObject();
            w.WriteStartObject("@names");
            foreach (var c in counters)
                w.WriteString(c.Name.ToLowerInvariant(), c.Name);
            w.WriteEndObject();
            w.WriteEndObject();
            w.WriteEndObject();
            counts.Add("CounterGroups", counters.Count);
        }
        w.WriteEndArray();

        w.WriteStartArray("RavenLiteTimeSeries");
        foreach (var (doc, names) in withSeries)
        {
            var key = db.Documents.KeyOf(doc.Id);
            foreach (string name in names)
            {
                w.WriteStartObject();
                w.WriteString("DocId", doc.Id);
                w.WriteString("Name", name);
                w.WriteStartArray("Entries");
                long n = 0;
                foreach (var p in TimeSeries.TimeSeriesStore.Read(tx, key, name, 0, long.MaxValue))
                {
                    TimeSeries.TimeSeriesEntryJson.WriteCompact(w, p);
                    if (++n % 4096 == 0)
                        w.Flush();
                }
                w.WriteEndArray();
                w.WriteEndObject();
                counts.Add("TimeSeries", n);
            }
        }
        w.WriteEndArray();
        w.WriteEndObject();
        w.Flush();
        return counts;
    }
}
