using RavenLite.Server.Attachments;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Indexing;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Smuggler;

/// <summary>
/// Reads a <c>.ravendbdump</c> (RavenDB 4–7's or RavenLite's; <see cref="DumpReader"/>) into a database, one element at a
/// time: documents (in batches of 512 through the merger) with their attachments (contents staged as they stream by,
/// then attached), revisions (each under a new etag, in the dump's order: oldest first), static indexes, identities,
/// compare-exchange values, counters, RavenLite's time series. What it does not read is counted as skipped with a
/// message: auto indexes (recreated by queries), tombstones, conflicts, subscriptions, the database record, and RavenDB's
/// binary time-series segments. A truncated or malformed dump stops
/// with an <see cref="InvalidDataException"/>; what was imported before stays and is counted.
/// </summary>
public sealed class DatabaseImporter(Database db, long maxAttachmentBytes)
{
    private const int BatchDocuments = 1024;
    private const int BatchesInFlight = 3;
    private const long BatchBytes = 4 << 20;

    private readonly Dictionary<string, StagedContent> _contents = new(StringComparer.Ordinal); // the dump's hash → content
    private readonly HashSet<string> _attached = new(StringComparer.Ordinal); // hashes some document took
    private readonly List<(string Id, byte[] Json, List<(string Name, string Hash, string? ContentType)> Attachments)> _batch = [];
    private long _batchBytes;
    private readonly Queue<Task> _inFlight = new(); // document batches queued to the merger, not yet durable

    /// <summary>What was imported so far.</summary>
    public SmugglerCounts Counts { get; } = new();

    /// <summary>Imports <paramref name="body"/>.</summary>
    public async Task ImportAsync(Stream body, CancellationToken cancellation)
    {
        try
        {
            await ReadAsync(body, cancellation).ConfigureAwait(false);
        }
        catch
        {
            // Batches already queued commit and are counted: the failure reports what was imported before it.
            while (_inFlight.Count > 0)
            {
                try
                {
                    await _inFlight.Dequeue().ConfigureAwait(false);
                }
                catch (Exception)
                {
                    // The first failure is the one reported.
                }
            }
            throw;
        }
        finally
        {
            // Contents no document took (the dump stopped first, or named them nowhere) are not left staged.
            foreach (var (hash, content) in _contents)
                if (content.Staged && !_attached.Contains(hash))
                    await AttachmentUpload.DiscardAsync(db.Merger, content.ContentId, content.Size).ConfigureAwait(false);
            _contents.Clear();
        }
    }

    private async Task ReadAsync(Stream body, CancellationToken cancellation)
    {
        using var reader = await DumpReader.OpenAsync(body, cancellation).ConfigureAwait(false);
        await reader.ExpectAsync((byte)'{', cancellation).ConfigureAwait(false);
        bool first = true;
        while (await reader.ReadPropertyNameAsync(first, cancellation).ConfigureAwait(false) is { } name)
        {
            first = false;
            switch (name)
            {
                case "Docs":
                    await ArrayAsync(reader, e => DocumentAsync(reader, e, cancellation), cancellation).ConfigureAwait(false);
                    await DrainAsync().ConfigureAwait(false);
                    break;
                case "Indexes":
                    await ArrayAsync(reader, e => Index(e), cancellation).ConfigureAwait(false);
                    break;
                case "DatabaseRecord":
                    using (var record = await reader.ReadValueAsync(cancellation).ConfigureAwait(false))
                        await DatabaseRecordAsync(record.RootElement).ConfigureAwait(false);
                    break;
                case "RevisionDocuments":
                    await DrainAsync().ConfigureAwait(false); // the documents are stored before their revisions
                    await ArrayAsync(reader, e => RevisionAsync(e, reader.LastValue), cancellation).ConfigureAwait(false);
                    break;
                case "Identities":
                    await ArrayAsync(reader, e => Small(ctx =>
                    {
                        if (Text(e, "Key") is { } key)
                            ctx.SeedIdentity(key, IdentityValue(e, key), force: true);
                    }, "Identities"), cancellation).ConfigureAwait(false);
                    break;
                case "CompareExchange":
                    await ArrayAsync(reader, e => CompareExchangeAsync(e), cancellation).ConfigureAwait(false);
                    break;
                case "CounterGroups":
                case "Counters":
                    await ArrayAsync(reader, e => CountersAsync(e), cancellation).ConfigureAwait(false);
                    break;
                case "RavenLiteTimeSeries":
                    await ArrayAsync(reader, e => TimeSeriesAsync(e), cancellation).ConfigureAwait(false);
                    break;
                case "TimeSeries":
                    await ArrayAsync(reader, async e =>
                    {
                        // RavenDB's segment: a header object, then Size raw bytes of its own encoding, which is not decoded here.
                        long size = e.TryGetProperty("Size", out var s) && s.TryGetInt64(out long n) ? n : 0;
                        await reader.RawStream(size).CopyToAsync(Stream.Null, cancellation).ConfigureAwait(false);
                        Counts.Add("TimeSeries", 0, 1);
                    }, cancellation).ConfigureAwait(false);
                    if (Counts.Read("TimeSeries") == 0)
                        Counts.Messages.Add("RavenDB's time-series segments were skipped: RavenLite does not decode RavenDB's segment encoding.");
                    break;
                default:
                    // BuildVersion, Tombstones, Conflicts, Subscriptions, ...: read and left.
                    if (await reader.PeekAsync(cancellation).ConfigureAwait(false) == '[')
                    {
                        long skipped = 0;
                        await ArrayAsync(reader, _ =>
                        {
                            skipped++;
                            return Task.CompletedTask;
                        }, cancellation).ConfigureAwait(false);
                        if (skipped > 0)
                        {
                            Counts.Add(name, 0, skipped);
                            Counts.Messages.Add($"{name}: {skipped} item(s) not imported (RavenLite does not import {name}).");
                        }
                    }
                    else
                    {
                        (await reader.ReadValueAsync(cancellation).ConfigureAwait(false)).Dispose();
                    }
                    break;
            }
        }
        await DrainAsync().ConfigureAwait(false);
        await ApplyRevisionsConfigurationAsync().ConfigureAwait(false);
    }

    private static async Task ArrayAsync(DumpReader reader, Func<JsonElement, Task> each, CancellationToken cancellation)
    {
        await reader.ExpectAsync((byte)'[', cancellation).ConfigureAwait(false);
        bool first = true;
        while (!await reader.TryConsumeAsync((byte)']', cancellation).ConfigureAwait(false))
        {
            if (!first)
                await reader.ExpectAsync((byte)',', cancellation).ConfigureAwait(false);
            first = false;
            using var element = await reader.ReadValueAsync(cancellation).ConfigureAwait(false);
            cancellation.ThrowIfCancellationRequested();
            await each(element.RootElement).ConfigureAwait(false);
        }
    }

    /// <summary>An identity's value: a whole number, written as a number or as a string of one (both are in dumps).</summary>
    private static long IdentityValue(JsonElement e, string key)
    {
        if (!e.TryGetProperty("Value", out var v))
            return 0;
        if (v.ValueKind == JsonValueKind.Number && v.TryGetInt64(out long n))
            return n;
        if (v.ValueKind == JsonValueKind.String && long.TryParse(v.GetString(), NumberStyles.Integer, CultureInfo.InvariantCulture, out n))
            return n;
        throw new InvalidDataException($"Identity '{key}' has the value {v.GetRawText()}; an identity is a whole number.");
    }

    private static string? Text(JsonElement e, string name) =>
        e.ValueKind == JsonValueKind.Object && e.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;

    private async Task DocumentAsync(DumpReader reader, JsonElement e, CancellationToken cancellation)
    {
        var metadata = e.ValueKind == JsonValueKind.Object && e.TryGetProperty("@metadata", out var m) && m.ValueKind == JsonValueKind.Object ? m : default;
        if (metadata.ValueKind == JsonValueKind.Object && Text(metadata, "@export-type") == "Attachment")
        {
            string hash = Text(e, "Hash") ?? throw new InvalidDataException("An attachment in the dump has no Hash.");
            long size = e.TryGetProperty("Size", out var s) && s.TryGetInt64(out long n) && n >= 0 ? n : throw new InvalidDataException($"Attachment {hash} in the dump has no Size.");
            var content = await AttachmentUpload.StageAsync(reader.RawStream(size), db.Merger, maxAttachmentBytes, cancellation).ConfigureAwait(false);
            _contents[hash] = content;
            return;
        }
        string? id = metadata.ValueKind == JsonValueKind.Object ? Text(metadata, "@id") : null;
        string flags = metadata.ValueKind == JsonValueKind.Object ? Text(metadata, "@flags") ?? "" : "";
        var flagSet = flags.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries);
        if (id == null || flagSet.Contains("Artificial") || flagSet.Contains("Revision")) // not "HasRevisions": a document that has revisions is imported
        {
            Counts.Add("Documents", 0, 1); // no id, a map-reduce output (made again by its index), or a revision among documents
            return;
        }
        var attachments = new List<(string, string, string?)>();
        if (metadata.TryGetProperty("@attachments", out var list) && list.ValueKind == JsonValueKind.Array)
            foreach (var a in list.EnumerateArray())
                if (Text(a, "Name") is { } name && Text(a, "Hash") is { } hash)
                    attachments.Add((name, hash, Text(a, "ContentType")));
        byte[] json = reader.LastValue; // the element's own bytes, as read
        _batch.Add((id, json, attachments));
        _batchBytes += json.Length;
        if (_batch.Count >= BatchDocuments || _batchBytes >= BatchBytes)
            await FlushAsync().ConfigureAwait(false);
    }

    /// <summary>Queues the pending documents as one merger command; at most <see cref="BatchesInFlight"/> wait to be durable at a time.</summary>
    private async Task FlushAsync()
    {
        if (_batch.Count == 0)
            return;
        var batch = _batch.ToList();
        _batch.Clear();
        _batchBytes = 0;
        var contents = _contents;
        foreach (var (_, _, attachments) in batch)
            foreach (var (_, hash, _) in attachments)
                if (contents.ContainsKey(hash))
                    _attached.Add(hash);
        var command = new DelegateCommand<int>(ctx =>
        {
            int missing = 0;
            foreach (var (id, json, attachments) in batch)
            {
                ctx.Put(id, json, null);
                foreach (var (name, hash, contentType) in attachments)
                {
                    if (contents.TryGetValue(hash, out var content))
                        AttachmentOperations.Put(ctx, id, name, contentType, content, null);
                    else
                        missing++;
                }
            }
            return missing;
        }, batch.Sum(b => (long)b.Json.Length));
        _inFlight.Enqueue(Count(db.Merger.EnqueueAsync(command), command, batch.Count, batch.Sum(b => b.Attachments.Count)));
        if (_inFlight.Count >= BatchesInFlight)
            await _inFlight.Dequeue().ConfigureAwait(false);
    }

    private async Task Count(Task durable, DelegateCommand<int> command, int documents, int attachments)
    {
        await durable.ConfigureAwait(false);
        int missing = command.Result;
        Counts.Add("Documents", documents);
        Counts.Add("Attachments", attachments - missing, missing);
        if (missing > 0)
            Counts.Messages.Add($"{missing} attachment(s) named by documents had no content in the dump and were left out.");
    }

    /// <summary>Waits until every queued document batch is durable (before what refers to documents, and at the end).</summary>
    private async Task DrainAsync()
    {
        await FlushAsync().ConfigureAwait(false);
        while (_inFlight.Count > 0)
            await _inFlight.Dequeue().ConfigureAwait(false);
    }

    /// <summary>
    /// The database record's configurations: revisions, expiration, refresh and time series (stored at once), the client
    /// configuration (clients pick it up), and the settings RavenLite has (applied when the database next opens); other
    /// settings are reported as skipped. A configuration that does not parse is a 400 (nothing of it is stored).
    /// </summary>
    private async Task DatabaseRecordAsync(JsonElement record)
    {
        if (record.ValueKind != JsonValueKind.Object)
            return;
        JsonElement Section(string name) => record.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.Object ? v : default;
        try
        {
            var revisions = Section("Revisions") is { ValueKind: JsonValueKind.Object } r ? Revisions.RevisionsConfiguration.Parse(r) : null;
            var expiration = Section("Expiration") is { ValueKind: JsonValueKind.Object } e ? Expiration.ExpirationConfiguration.Parse(e, "DeleteFrequencyInSec") : null;
            var refresh = Section("Refresh") is { ValueKind: JsonValueKind.Object } f ? Expiration.ExpirationConfiguration.Parse(f, "RefreshFrequencyInSec") : null;
            var series = Section("TimeSeries") is { ValueKind: JsonValueKind.Object } t ? TimeSeries.TimeSeriesConfiguration.Parse(t) : null;
            var client = Section("Client") is { ValueKind: JsonValueKind.Object } c ? DatabaseRecordFile.ParseClientConfiguration(c) : null;
            _revisionsConfiguration = revisions; // stored after the documents: importing them must not make revisions the dump already holds
            if (expiration != null || refresh != null || series != null)
            {
                await db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
                {
                    if (expiration != null)
                        db.Expiration.Save(ctx.Transaction, refresh: false, expiration);
                    if (refresh != null)
                        db.Expiration.Save(ctx.Transaction, refresh: true, refresh);
                    if (series != null)
                        db.TimeSeries.Save(ctx.Transaction, series);
                    return true;
                })).ConfigureAwait(false);
            }
            var settings = new Dictionary<string, string>(StringComparer.Ordinal);
            if (Section("Settings") is { ValueKind: JsonValueKind.Object } s)
            {
                foreach (var p in s.EnumerateObject())
                {
                    if (DatabaseRecordFile.KnownSettings.ContainsKey(p.Name) && p.Value.ValueKind == JsonValueKind.String)
                        settings[p.Name] = p.Value.GetString()!;
                    else
                        Counts.Messages.Add($"Setting '{p.Name}' not imported: RavenLite's database settings are {string.Join(", ", DatabaseRecordFile.KnownSettings.Keys)}.");
                }
                if (settings.Count > 0)
                {
                    using var json = JsonDocument.Parse(JsonSerializer.SerializeToUtf8Bytes(settings));
                    settings = DatabaseRecordFile.ParseSettings(json.RootElement);
                }
            }
            if (client != null || settings.Count > 0)
            {
                db.UpdateRecord(r =>
                {
                    if (client != null)
                    {
                        r.Client = client;
                        r.ClientEtag = Math.Max(DateTime.UtcNow.Ticks, r.ClientEtag + 1);
                    }
                    foreach (var (k, v) in settings)
                        r.Settings[k] = v;
                });
                if (settings.Count > 0)
                    Counts.Messages.Add($"Settings {string.Join(", ", settings.Keys)} imported: they apply when the database next opens.");
            }
            Counts.Add("DatabaseRecord");
        }
        catch (DomainException e)
        {
            throw new InvalidDataException("The dump's database record does not apply: " + e.Message, e);
        }
    }

    private Revisions.RevisionsConfiguration? _revisionsConfiguration;

    /// <summary>Stores the dump's revisions configuration (held back until the documents and revisions are in).</summary>
    private async Task ApplyRevisionsConfigurationAsync()
    {
        if (_revisionsConfiguration is not { } revisions)
            return;
        _revisionsConfiguration = null;
        await db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
        {
            db.Revisions.Save(ctx.Transaction, revisions);
            return true;
        })).ConfigureAwait(false);
    }

    /// <summary>A revision (dumps list a document's revisions oldest first): stored under a new etag, its JSON as exported.</summary>
    private Task RevisionAsync(JsonElement e, byte[] json)
    {
        var metadata = e.ValueKind == JsonValueKind.Object && e.TryGetProperty("@metadata", out var m) && m.ValueKind == JsonValueKind.Object ? m : default;
        string? id = metadata.ValueKind == JsonValueKind.Object ? Text(metadata, "@id") : null;
        if (id == null)
        {
            Counts.Add("RevisionDocuments", 0, 1);
            return Task.CompletedTask;
        }
        string collection = Text(metadata, "@collection") ?? "@empty";
        var modified = Text(metadata, "@last-modified") is { } lm && DateTime.TryParse(lm, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t)
            ? t : DateTime.UtcNow;
        return Small(ctx => Revisions.RevisionsExtension.Import(ctx, id, collection, modified, json), "RevisionDocuments");
    }

    private Task Small(Action<DocumentsWriteContext> write, string kind) => SmallAsync(write, kind);

    private async Task SmallAsync(Action<DocumentsWriteContext> write, string kind)
    {
        await db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
        {
            write(ctx);
            return true;
        })).ConfigureAwait(false);
        Counts.Add(kind);
    }

    private Task Index(JsonElement e)
    {
        string type = Text(e, "Type") ?? "Map";
        var definition = e.TryGetProperty("IndexDefinition", out var d) ? d : e;
        if (type.StartsWith("Auto", StringComparison.Ordinal))
        {
            Counts.Add("Indexes", 0, 1);
            Counts.Messages.Add($"Auto index '{Text(definition, "Name")}' not imported: queries create auto indexes when they need them.");
            return Task.CompletedTask;
        }
        try
        {
            var parsed = IndexDefinitionJson.Read(definition);
            db.Indexes.Put(parsed, Indexing.IndexCompiler.Compile(parsed, db.Analysis, checkAnalyzers: false));
            Counts.Add("Indexes");
        }
        catch (DomainException x)
        {
            Counts.Add("Indexes", 0, 1);
            Counts.Messages.Add($"Index '{Text(definition, "Name")}' not imported: {x.Message}");
        }
        return Task.CompletedTask;
    }

    private Task CompareExchangeAsync(JsonElement e)
    {
        string key = Text(e, "Key") ?? throw new InvalidDataException("A compare-exchange item in the dump has no Key.");
        string? text = Text(e, "Value");
        if (text == null)
        {
            Counts.Add("CompareExchange", 0, 1); // a tombstone
            return Task.CompletedTask;
        }
        using var value = JsonDocument.Parse(text);
        byte[] json = CompareExchange.CompareExchangeStore.ValidateValue(value.RootElement, $"compare-exchange value '{key}'");
        return SmallAsync(ctx =>
        {
            var tx = ctx.Transaction;
            long current = CompareExchange.CompareExchangeStore.Get(tx, key)?.Index ?? 0;
            CompareExchange.CompareExchangeStore.Put(tx, key, current, json, () => CompareExchange.CompareExchangeStore.NextIndex(tx));
        }, "CompareExchange");
    }

    private Task CountersAsync(JsonElement e)
    {
        string id = Text(e, "DocId") ?? throw new InvalidDataException("A counter group in the dump has no DocId.");
        var totals = new List<(string Name, long Total)>();
        if (Text(e, "Name") is { } legacyName && e.TryGetProperty("Value", out var legacy) && legacy.TryGetDouble(out double lv))
        {
            totals.Add((legacyName, (long)lv)); // RavenDB 4.1's one counter per item
        }
        else if (e.TryGetProperty("Values", out var values) && values.ValueKind == JsonValueKind.Object && values.TryGetProperty("@counters", out var counters) && counters.ValueKind == JsonValueKind.Object)
        {
            values.TryGetProperty("@names", out var names);
            foreach (var c in counters.EnumerateObject())
            {
                if (c.Value.ValueKind != JsonValueKind.Array)
                    continue; // a deleted counter
                long total = 0;
                int i = 0;
                foreach (var v in c.Value.EnumerateArray())
                    if (i++ % 2 == 0 && v.TryGetInt64(out long n))
                        total += n; // [value, etag] per database id
                string name = names.ValueKind == JsonValueKind.Object && names.TryGetProperty(c.Name, out var original) && original.ValueKind == JsonValueKind.String ? original.GetString()! : c.Name;
                totals.Add((name, total));
            }
        }
        return SmallAsync(ctx =>
        {
            if (ctx.Find(id) is not var (storedId, _))
                return;
            var key = ctx.KeyOf(storedId);
            foreach (var (name, total) in totals)
            {
                long before = Counters.CountersStore.Get(ctx.Transaction, key, name)?.Value ?? 0;
                var (counter, _) = Counters.CountersStore.Put(ctx.Transaction, key, name, total);
                Counters.CounterShares.Local(ctx, key, counter.Name, before, total, deleted: false);
            }
            ctx.UpdateExtras(storedId, extras =>
            {
                bool changed = false;
                foreach (var (name, _) in totals)
                    changed |= extras.Counters.Add(name);
                return changed;
            });
        }, "CounterGroups");
    }

    private Task TimeSeriesAsync(JsonElement e)
    {
        string id = Text(e, "DocId") ?? throw new InvalidDataException("A time series in the dump has no DocId.");
        string name = Text(e, "Name") ?? throw new InvalidDataException("A time series in the dump has no Name.");
        var points = new List<TimeSeries.TimeSeriesPoint>();
        if (e.TryGetProperty("Entries", out var entries) && entries.ValueKind == JsonValueKind.Array)
        {
            foreach (var p in entries.EnumerateArray())
                points.Add(TimeSeries.TimeSeriesEntryJson.ReadCompact(p));
        }
        points.Sort((a, b) => a.Milliseconds.CompareTo(b.Milliseconds));
        if (points.Count == 0)
            return Task.CompletedTask;
        return SmallAsync(ctx =>
        {
            if (ctx.Find(id) is not var (storedId, _))
                return;
            var key = ctx.KeyOf(storedId);
            TimeSeries.TimeSeriesStore.Change(ctx.Transaction, key, name, points[0].Milliseconds, points[^1].Milliseconds,
                existing => existing.Where(x => x.Milliseconds < points[0].Milliseconds || x.Milliseconds > points[^1].Milliseconds).Concat(points).OrderBy(x => x.Milliseconds).ToList());
            TimeSeries.TimeSeriesReplication.Record(ctx, key, name, points[0].Milliseconds, points[^1].Milliseconds, deleted: false);
            ctx.UpdateExtras(storedId, extras => extras.TimeSeries.Add(name));
        }, "TimeSeries");
    }
}
