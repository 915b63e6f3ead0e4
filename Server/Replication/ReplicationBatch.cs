using RavenLite.Server.Documents;

namespace RavenLite.Server.Replication;

/// <summary>
/// One batch a sender sends (docs/replication.md "Batches"): the documents and tombstones after a position, in
/// local-etag order, read from one snapshot. It closes at a transaction's end once it holds
/// <see cref="Limits.Items"/> items or <see cref="Limits.Bytes"/> bytes — a transaction is never split — and before a
/// transaction younger than the task's delay. Items the destination already has (its change vector contains theirs)
/// are left out; the position still moves past them.
/// </summary>
/// <param name="Frame">The batch's frame JSON.</param>
/// <param name="LastEtag">The position after the batch: the destination records it once the batch is applied.</param>
/// <param name="Items">Items in the batch.</param>
/// <param name="Bytes">Document bytes in the batch.</param>
/// <param name="Full">It closed at its limits with more to send after it (a backlog, not the tail of live writes).</param>
internal sealed record ReplicationBatch(ReadOnlyMemory<byte> Frame, long LastEtag, int Items, long Bytes, bool Full)
{
    /// <summary>The bounds of one batch.</summary>
    public readonly record struct Limits(int Items, int Bytes, TimeSpan Delay);

    /// <summary>
    /// The next batch after <paramref name="afterEtag"/> in snapshot <paramref name="tx"/> (keep it open until the batch
    /// is acknowledged: the attachment contents it refers to are read from it), or null when there is nothing after it
    /// (or only what the delay holds back).
    /// </summary>
    public static ReplicationBatch? Read(DocumentsStorage documents, RavenLite.Storage.Transactions.Transaction tx, long afterEtag, string destinationChangeVector, Limits limits)
    {
        long last = DocumentsStorage.LastEtag(tx);
        if (last <= afterEtag)
            return null;
        var youngest = DateTime.UtcNow - limits.Delay;
        var buffer = new ArrayBufferWriter<byte>(64 * 1024);
        int items = 0;
        long bytes = 0, reached = afterEtag, transactionEnd = 0;
        bool exhausted = true, filled = false;
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteString("Type", "Batch");
            w.WriteStartArray(nameof(Items));
            foreach (var item in Feed(documents, tx, afterEtag))
            {
                if (item.Etag > transactionEnd)
                {
                    // A transaction starts here: the batch may close before it.
                    reached = Math.Max(reached, transactionEnd);
                    bool full = items >= limits.Items || bytes >= limits.Bytes;
                    bool tooYoung = limits.Delay > TimeSpan.Zero && item.Counter == null && item.Series == null && (item.Document?.LastModified ?? item.Revision?.LastModified ?? item.Tombstone!.Deleted) > youngest;
                    if (full || tooYoung)
                    {
                        exhausted = false;
                        filled = full;
                        break;
                    }
                    transactionEnd = DocumentsStorage.TransactionEnd(tx, item.Etag);
                }
                if (item.Counter is { } counter)
                {
                    WriteCounter(w, counter);
                    items++;
                    bytes += 64;
                    continue;
                }
                if (item.Series is { } series)
                {
                    WriteSeries(w, series);
                    items++;
                    bytes += 64 + series.Points.Count * 24L;
                    continue;
                }
                string changeVector = item.Document?.ChangeVector ?? item.Revision?.ChangeVector ?? item.Tombstone!.ChangeVector;
                if (destinationChangeVector.Length > 0 && ChangeVectors.Compare(changeVector, destinationChangeVector) == ChangeVectorOrder.NotNewer)
                    continue;
                Write(w, item);
                items++;
                bytes += item.Document?.Json.Length ?? item.Revision?.Json.Length ?? 64;
            }
            w.WriteEndArray();
            if (exhausted)
                reached = last;
            w.WriteNumber(nameof(LastEtag), reached);
            w.WriteEndObject();
        }
        return reached > afterEtag ? new ReplicationBatch(buffer.WrittenMemory, reached, items, bytes, filled) : null;
    }

    /// <summary>One position of the feed: a document or tombstone, a revision, a counter's change or a time series' change.</summary>
    private sealed record FeedItem(long Etag, StoredDocument? Document, Tombstone? Tombstone, Counters.CounterShares.Change? Counter, StoredDocument? Revision = null,
        TimeSeries.TimeSeriesReplication.Change? Series = null);

    /// <summary>
    /// Documents, tombstones, revisions and counter changes after <paramref name="afterEtag"/>, merged in etag order (a
    /// revision made with a version shares its etag and comes after it).
    /// </summary>
    private static IEnumerable<FeedItem> Feed(DocumentsStorage documents, RavenLite.Storage.Transactions.Transaction tx, long afterEtag)
    {
        var sources = new List<IEnumerator<FeedItem>>
        {
            documents.ScanByEtag(tx, afterEtag).Select(d => new FeedItem(d.Etag, d.Document, d.Tombstone, null)).GetEnumerator(),
            Revisions.RevisionsStore.ScanAfter(tx, afterEtag, documents).Select(r => new FeedItem(r.Current.Etag, null, null, null, r.Current)).GetEnumerator(),
            Counters.CounterShares.ScanByEtag(tx, afterEtag).Select(c => new FeedItem(c.Etag, null, null, c)).GetEnumerator(),
            TimeSeries.TimeSeriesReplication.ScanByEtag(tx, afterEtag).Select(t => new FeedItem(t.Etag, null, null, null, null, t)).GetEnumerator(),
        };
        try
        {
            var live = sources.Where(s => s.MoveNext()).ToList();
            while (live.Count > 0)
            {
                var next = live[0];
                foreach (var s in live)
                    if (s.Current.Etag < next.Current.Etag)
                        next = s;
                yield return next.Current;
                if (!next.MoveNext())
                    live.Remove(next);
            }
        }
        finally
        {
            foreach (var s in sources)
                s.Dispose();
        }
    }

    private static void WriteSeries(Utf8JsonWriter w, TimeSeries.TimeSeriesReplication.Change series)
    {
        w.WriteStartObject();
        w.WriteString("Type", "TimeSeries");
        w.WriteString("DocumentKey", series.DocumentKey);
        w.WriteString("Name", series.Name);
        w.WriteNumber("From", series.From);
        w.WriteNumber("To", series.To);
        w.WriteBoolean("Deleted", series.Deleted);
        w.WriteStartArray("Points");
        foreach (var p in series.Points)
            TimeSeries.TimeSeriesEntryJson.WriteCompact(w, p);
        w.WriteEndArray();
        if (series.Shares.Count > 0)
        {
            w.WriteStartArray("Shares");
            foreach (var s in series.Shares)
            {
                w.WriteStartObject();
                w.WriteNumber("At", s.Milliseconds);
                w.WriteString("Owner", s.Owner);
                w.WriteStartArray("Increases");
                foreach (double v in s.Increases)
                    w.WriteNumberValue(v);
                w.WriteEndArray();
                w.WriteStartArray("Decreases");
                foreach (double v in s.Decreases)
                    w.WriteNumberValue(v);
                w.WriteEndArray();
                w.WriteEndObject();
            }
            w.WriteEndArray();
        }
        w.WriteEndObject();
    }

    private static void WriteCounter(Utf8JsonWriter w, Counters.CounterShares.Change counter)
    {
        w.WriteStartObject();
        w.WriteString("Type", "Counter");
        w.WriteString("DocumentKey", counter.DocumentKey);
        w.WriteString("Name", counter.Name);
        w.WriteBoolean("Deleted", counter.Deleted);
        w.WriteStartArray("Shares");
        foreach (var s in counter.Shares)
        {
            w.WriteStartObject();
            w.WriteString("DatabaseId", s.DatabaseId);
            w.WriteNumber("Value", s.Value);
            w.WriteNumber("Etag", s.Etag);
            w.WriteEndObject();
        }
        w.WriteEndArray();
        w.WriteEndObject();
    }

    private static void Write(Utf8JsonWriter w, FeedItem item)
    {
        w.WriteStartObject();
        if ((item.Document ?? item.Revision) is { } doc)
        {
            w.WriteString("Type", item.Revision != null ? "Revision" : "Document");
            w.WriteString("Id", doc.Id);
            w.WriteString("Collection", doc.Collection);
            w.WriteString("ChangeVector", doc.ChangeVector);
            w.WriteNumber("LastModified", doc.LastModified.Ticks);
            w.WritePropertyName("Data");
            w.WriteRawValue(doc.Json, skipInputValidation: true);
        }
        else
        {
            var tomb = item.Tombstone!;
            w.WriteString("Type", "Tombstone");
            w.WriteString("Id", tomb.LowerId);
            w.WriteString("Collection", tomb.Collection);
            w.WriteString("ChangeVector", tomb.ChangeVector);
            w.WriteNumber("LastModified", tomb.Deleted.Ticks);
        }
        w.WriteEndObject();
    }
}
