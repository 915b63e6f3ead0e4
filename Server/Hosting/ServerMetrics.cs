using System.Diagnostics.Metrics;
using OpenTelemetry.Metrics;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Security;

namespace RavenLite.Server.Hosting;

/// <summary>
/// Metrics with OpenTelemetry, exported in Prometheus format at <c>GET /metrics</c>: ASP.NET Core's own HTTP
/// instruments (request duration histograms by route, Kestrel connections), .NET's runtime meter (GC, memory, thread
/// pool), the storage engine's fsync histogram (<see cref="Storage.StorageMetrics"/>), the merger's batch sizes, and
/// observable instruments read from counters the server keeps anyway when a scrape comes (documents written,
/// merged transactions, commits, journal bytes, flushes, flush lag, per-index lag and documents indexed), so the
/// write path pays nothing for them. <c>Metrics=false</c> turns all of it off.
/// </summary>
public sealed class ServerMetrics : IDisposable
{
    /// <summary>The server's meter.</summary>
    public const string MeterName = "RavenLite";

    private readonly Meter _meter;
    private readonly DatabaseRegistry _registry;

    public ServerMetrics(IMeterFactory meters, DatabaseRegistry registry)
    {
        _registry = registry;
        _meter = meters.Create(MeterName);
        _meter.CreateObservableCounter("ravenlite.documents.written", () => PerDatabase(db => LastEtag(db)), "{document}", "Documents written or deleted (the database's last etag)");
        _meter.CreateObservableCounter("ravenlite.merger.transactions", () => PerDatabase(db => db.Merger.GetStats().Transactions), "{transaction}", "Merged transactions committed");
        _meter.CreateObservableCounter("ravenlite.storage.commits", () => PerDatabase(db => db.Environment.GetStats().Commits), "{commit}", "Storage transactions committed");
        _meter.CreateObservableCounter("ravenlite.storage.journal.bytes", () => PerDatabase(db => db.Environment.GetStats().JournalBytesWritten), "By", "Journal bytes written");
        _meter.CreateObservableCounter("ravenlite.storage.flushes", () => PerDatabase(db => db.Environment.GetStats().Flushes), "{flush}", "Flushes of committed pages to the data file");
        _meter.CreateObservableGauge("ravenlite.storage.flush.lag", () => PerDatabase(db => db.Environment.GetStats() is var s ? s.LastCommittedTxId - s.LastSyncedTxId : 0), "{transaction}", "Committed transactions not yet flushed to the data file");
        _meter.CreateObservableGauge("ravenlite.storage.data.size", () => PerDatabase(db => db.Environment.GetStats().DataFileBytes), "By", "Data file size");
        _meter.CreateObservableGauge("ravenlite.storage.disk_full", () => PerDatabase(db => db.Environment.DiskFull != null ? 1 : 0), "{state}", "1 while the disk is full for the database: writes are refused (507) or flushes wait, until space is freed");
        _meter.CreateObservableGauge("ravenlite.index.disk_full", () => PerIndex((_, index, _) => index.DiskFull ? 1 : 0), "{state}", "1 while an index is paused for want of disk space");
        _meter.CreateObservableGauge("ravenlite.index.lag", () => PerIndex((_, index, tx) => IndexLag(index, tx)), "{etag}", "How far an index is behind its collections (etags)");
        _meter.CreateObservableCounter("ravenlite.index.documents", () => PerIndex((_, index, _) => index.MapCounts.Attempts), "{document}", "Documents an index mapped");
    }

    /// <summary>Adds OpenTelemetry metrics with the Prometheus exporter (unless <see cref="ServerOptions.Metrics"/> is off).</summary>
    public static void AddServices(IServiceCollection services, ServerOptions options)
    {
        services.AddSingleton<ServerMetrics>();
        if (!options.Metrics)
            return;
        services.AddOpenTelemetry().WithMetrics(m => m
            .AddMeter(MeterName, Storage.StorageMetrics.MeterName, TransactionMerger.WriteMerger.MeterName, "Microsoft.AspNetCore.Hosting", "System.Runtime")
            // Per request, only what tells requests apart: fewer tags, less work aggregating each measurement.
            .AddView("http.server.request.duration", new MetricStreamConfiguration { TagKeys = ["http.route", "http.request.method", "http.response.status_code"] })
            .AddPrometheusExporter());
    }

    /// <summary>Maps <c>GET /metrics</c>.</summary>
    public static void Map(WebApplication app, ServerOptions options)
    {
        _ = app.Services.GetRequiredService<ServerMetrics>(); // creates the instruments
        if (options.Metrics)
            app.MapPrometheusScrapingEndpoint("/metrics").Requires(Access.Operator);
    }

    /// <summary>One open database's counters (the Studio dashboard samples them every second).</summary>
    public sealed record DatabaseSample(string Name, long LastDocEtag, long IndexedDocuments, long IndexLag, long DataFileBytes, long JournalBytesWritten, long Commits);

    /// <summary>The counters of every open database now.</summary>
    public List<DatabaseSample> Sample()
    {
        var samples = new List<DatabaseSample>();
        ForEachOpen(db =>
        {
            long lastEtag, indexed = 0, lag = 0;
            using (var tx = db.Environment.ReadTransaction())
            {
                lastEtag = DocumentsStorage.LastEtag(tx);
                foreach (var index in db.Indexes.All)
                {
                    indexed += index.MapCounts.Attempts;
                    lag += IndexLag(index, tx);
                }
            }
            var s = db.Environment.GetStats();
            samples.Add(new DatabaseSample(db.Name, lastEtag, indexed, lag, s.DataFileBytes, s.JournalBytesWritten, s.Commits));
        });
        return samples;
    }

    /// <summary>Etags an index is behind its collections at <paramref name="tx"/>'s snapshot.</summary>
    private static long IndexLag(Indexing.Index index, Storage.Transactions.Transaction tx)
    {
        long lag = 0;
        foreach (var (collection, etag) in index.TargetOf(tx).LastEtags)
            lag += Math.Max(0, etag - index.Position.LastEtags.GetValueOrDefault(collection));
        return lag;
    }

    private static long LastEtag(Database db)
    {
        using var tx = db.Environment.ReadTransaction();
        return DocumentsStorage.LastEtag(tx);
    }

    private List<Measurement<long>> PerDatabase(Func<Database, long> read)
    {
        var measurements = new List<Measurement<long>>();
        ForEachOpen(db => measurements.Add(new Measurement<long>(read(db), new KeyValuePair<string, object?>("database", db.Name))));
        return measurements;
    }

    private List<Measurement<long>> PerIndex(Func<Database, Indexing.Index, Storage.Transactions.Transaction, long> read)
    {
        var measurements = new List<Measurement<long>>();
        ForEachOpen(db =>
        {
            using var tx = db.Environment.ReadTransaction();
            foreach (var index in db.Indexes.All)
                measurements.Add(new Measurement<long>(read(db, index, tx), new KeyValuePair<string, object?>("database", db.Name), new KeyValuePair<string, object?>("index", index.Name)));
        });
        return measurements;
    }

    /// <summary>Runs <paramref name="action"/> on every open database (never opening one; one closing meanwhile is skipped).</summary>
    private void ForEachOpen(Action<Database> action)
    {
        foreach (string name in _registry.OpenNames)
        {
            Database db;
            try
            {
                db = _registry.Acquire(name);
            }
            catch (Exception e) when (e is Http.ApiException or ObjectDisposedException)
            {
                continue;
            }
            try
            {
                action(db);
            }
            catch (Exception e) when (e is ObjectDisposedException or Storage.StorageFailedException)
            {
                // closed or failed meanwhile: no measurement
            }
            finally
            {
                db.Release();
            }
        }
    }

    public void Dispose() => _meter.Dispose();
}
