using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;
using RavenLite.Server.Http;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary><c>GET /databases/{db}/stats</c> (docs/protocol.md §10.3) plus RavenLite's storage and merger counters.</summary>
public static class StatsEndpoints
{
    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app)
    {
        app.MapGet("/databases/{db}/stats", DatabaseRoute.Handle((c, db) => Get(c, db, detailed: false))).Requires(Access.DatabaseRead);
        app.MapGet("/databases/{db}/stats/detailed", DatabaseRoute.Handle((c, db) => Get(c, db, detailed: true))).Requires(Access.DatabaseRead);
    }

    // Kept whole: the statistics answer written field by field in RavenDB's shape, from one snapshot.
    /// <summary>Database statistics; <paramref name="detailed"/> adds RavenDB's <c>DetailedDatabaseStatistics</c> counts (identities, compare-exchange values).</summary>
    private static Task Get(HttpContext context, Database db, bool detailed)
    {
        long docs, tombstones, lastEtag, counters, revisions, segments, identities = 0, values = 0;
        (long Unique, long Attachments, long Bytes) attachments;
        string changeVector;
        long conflicts, conflictVersions;
        var indexes = new List<(Indexing.Index Index, bool Stale)>();
        using (var tx = db.Environment.ReadTransaction())
        {
            docs = DocumentsStorage.CountDocuments(tx);
            tombstones = DocumentsStorage.CountTombstones(tx);
            lastEtag = DocumentsStorage.LastEtag(tx);
            changeVector = db.Documents.DatabaseChangeVector(tx);
            conflicts = DocumentConflicts.All(tx).Count;
            conflictVersions = DocumentConflicts.Count(tx);
            counters = Counters.CountersStore.DocumentCount(tx);
            revisions = Revisions.RevisionsStore.CountAll(tx);
            segments = TimeSeries.TimeSeriesStore.SegmentCount(tx);
            attachments = Attachments.AttachmentsStore.Stats(tx);
            if (detailed)
            {
                identities = DocumentsStorage.Identities(tx).Count;
                values = CompareExchange.CompareExchangeStore.List(tx, "", 0, int.MaxValue)
                    .LongCount(e => !e.Key.StartsWith(CompareExchange.CompareExchangeStore.AtomicGuardPrefix, StringComparison.OrdinalIgnoreCase));
            }
            foreach (var index in db.Indexes.All)
                indexes.Add((index, Indexing.Index.IsBehind(index.Position, index.TargetOf(tx))));
        }
        var storage = db.Environment.GetStats();
        var merger = db.Merger.GetStats();
        long size = DirectorySize(db.Directory);
        return JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteNumber("CountOfDocuments", docs);
            w.WriteNumber("CountOfTombstones", tombstones);
            w.WriteNumber("CountOfIndexes", indexes.Count);
            w.WriteNumber("CountOfConflicts", conflictVersions);
            w.WriteNumber("CountOfAttachments", attachments.Attachments);
            w.WriteNumber("CountOfRevisionDocuments", revisions);
            w.WriteNumber("CountOfCounterEntries", counters);
            w.WriteNumber("CountOfTimeSeriesSegments", segments);
            w.WriteNumber("CountOfDocumentsConflicts", conflicts);
            w.WriteNumber("CountOfUniqueAttachments", attachments.Unique);
            if (detailed)
            {
                w.WriteNumber("CountOfIdentities", identities);
                w.WriteNumber("CountOfCompareExchange", values);
                w.WriteNumber("CountOfCompareExchangeTombstones", 0); // deleted values leave no tombstone here
                w.WriteNumber("CountOfTimeSeriesDeletedRanges", 0); // deleted ranges are removed from their segments at once
            }
            w.WriteString("DatabaseChangeVector", changeVector);
            w.WriteString("DatabaseId", db.Documents.DatabaseId);
            w.WriteNumber("LastDocEtag", lastEtag);
            w.WriteBoolean("Is64Bit", Environment.Is64BitProcess);
            w.WriteString("Pager", "RavenLite.Storage");
            Replication.ReplicationStatsJson.Write(w, db);
            var lastIndexing = indexes.Select(i => i.Index.LastIndexingTime).Max();
            if (lastIndexing is { } li)
                w.WriteString("LastIndexingTime", JsonDates.FormatDate(li));
            else
                w.WriteNull("LastIndexingTime");
            w.WriteStartArray("Indexes");
            foreach (var (index, stale) in indexes)
            {
                w.WriteStartObject();
                w.WriteString("Name", index.Name);
                w.WriteBoolean("IsStale", stale);
                w.WriteString("State", index.Definition.State);
                w.WriteString("LockMode", index.Definition.LockMode);
                w.WriteString("Priority", index.Definition.Priority);
                w.WriteString("Type", index.Definition.Type);
                w.WriteString("SourceType", index.Definition.SourceType.ToString());
                if (index.LastIndexingTime is { } t)
                    w.WriteString("LastIndexingTime", JsonDates.FormatDate(t));
                else
                    w.WriteNull("LastIndexingTime");
                w.WriteEndObject();
            }
            w.WriteEndArray();
            Formatting.Sizes.Write(w, "SizeOnDisk", size);
            Formatting.Sizes.Write(w, "TempBuffersSizeOnDisk", 0);
            w.WriteStartObject("Merger");
            w.WriteNumber("Transactions", merger.Transactions);
            w.WriteNumber("Operations", merger.Operations);
            w.WriteNumber("Requests", merger.Commands);
            w.WriteNumber("AverageOperationsPerTransaction", Math.Round(merger.AverageOperationsPerTransaction, 2));
            w.WriteNumber("LargestTransaction", merger.LargestTransaction);
            w.WriteNumber("LastTransaction", merger.LastTransaction);
            w.WriteNumber("AverageCommitMs", Math.Round(merger.AverageCommitMs, 3));
            w.WriteEndObject();
            w.WriteStartObject("Storage");
            w.WriteNumber("DataFileBytes", storage.DataFileBytes);
            w.WriteNumber("JournalBytesWritten", storage.JournalBytesWritten);
            w.WriteNumber("Commits", storage.Commits);
            w.WriteNumber("Flushes", storage.Flushes);
            w.WriteNumber("LastCommittedTxId", storage.LastCommittedTxId);
            w.WriteNumber("PagesWaitingForFlush", storage.PagesWaitingForFlush);
            w.WriteNumber("Pages", storage.PagesInUse);
            w.WriteNumber("UsedPages", storage.UsedPages);
            w.WriteNumber("FreePages", storage.FreePages);
            w.WriteNumber("ReusePendingPages", storage.ReusePendingPages);
            w.WriteNumber("UndoFileBytes", storage.UndoFileBytes);
            w.WriteNumber("PagePoolSlabs", storage.PagePoolSlabs);
            w.WriteNumber("PagePoolSlabsMapped", storage.PagePoolSlabsMapped);
            w.WriteEndObject();
            var compression = db.Documents.Compression;
            var (jsonBytes, storedBytes) = compression.CompressedBytes;
            w.WriteStartObject("DocumentCompression");
            w.WriteNumber("Dictionaries", compression.DictionaryCount);
            w.WriteNumber("DocumentsWrittenCompressed", compression.CompressedWrites);
            w.WriteNumber("JsonBytes", jsonBytes);
            w.WriteNumber("CompressedBytes", storedBytes);
            w.WriteEndObject();
            // The server process's .NET memory (shared by all databases): collections and pause share show GC pressure.
            var gc = GC.GetGCMemoryInfo();
            w.WriteStartObject("Process");
            w.WriteNumber("GcGen0Collections", GC.CollectionCount(0));
            w.WriteNumber("GcGen1Collections", GC.CollectionCount(1));
            w.WriteNumber("GcGen2Collections", GC.CollectionCount(2));
            w.WriteNumber("GcPauseTimePercentage", Math.Round(gc.PauseTimePercentage, 2));
            w.WriteNumber("GcTotalPauseMs", Math.Round(GC.GetTotalPauseDuration().TotalMilliseconds, 1));
            w.WriteNumber("AllocatedBytes", GC.GetTotalAllocatedBytes());
            w.WriteNumber("ManagedHeapBytes", gc.HeapSizeBytes);
            w.WriteBoolean("ServerGc", System.Runtime.GCSettings.IsServerGC);
            w.WriteEndObject();
            w.WriteEndObject();
        });
    }

    private static long DirectorySize(string dir)
    {
        try
        {
            return new DirectoryInfo(dir).EnumerateFiles("*", SearchOption.AllDirectories).Sum(f => f.Length);
        }
        catch (IOException)
        {
            return 0;
        }
    }
}
