using System.Diagnostics.Metrics;
using OpenTelemetry.Metrics;
using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.Security;

namespace RavenLite.Server.Monitoring;

/// <summary>
/// Metrics with OpenTelemetry, exported in Prometheus format at <c>GET /metrics</c>: ASP.NET Core's own HTTP
/// instruments (request duration histograms by route, Kestrel connections), .NET's runtime meter (GC, memory, thread
/// pool), the storage engine's fsync histogram (<see cref="Storage.StorageMetrics"/>), the merger's batch sizes, and
/// observable instruments read from counters the server keeps anyway when a scrape comes (documents written,
/// merged transactions, commits, journal bytes, flushes, flush lag, per-index lag and documents indexed, per replication
/// task lag and connection, per ETL transformation lag, state and documents loaded), so the
/// write path pays nothing for them. <c>Metrics=false</c> turns all of it off.
/// </summary>
public sealed class ServerMetrics : IDisposable
{
    /// <summary>The server's meter.</summary>
    public const string MeterName = "RavenLite";

    /// <summary>Series kept per instrument of the server's meter (one per database, or per index).</summary>
    private const int MaxSeries = 100_000;

    /// <summary>
    /// One meter for the process, never disposed, whose instruments report every live server's databases (one in a
    /// deployment). A meter per server, as <c>IMeterFactory</c> gives, broke in a process with several servers (the
    /// tests; an application embedding two): OpenTelemetry merges same-named instruments of same-named meters into one
    /// stream and drops that stream when any of those meters is disposed, so one server stopping took the other
    /// servers' series off their <c>/metrics</c> (OpenTelemetry .NET issue 6412).
    /// </summary>
    private static readonly Meter Meter = new(MeterName);

    private static readonly List<ServerMetrics> Live = [];

    private readonly DatabaseRegistry _registry;

    static ServerMetrics()
    {
        Meter.CreateObservableCounter("ravenlite.documents.written", () => Observe(m => m.PerDatabase(db => LastEtag(db))), "{document}", "Documents written or deleted (the database's last etag)");
        Meter.CreateObservableCounter("ravenlite.merger.transactions", () => Observe(m => m.PerDatabase(db => db.Merger.GetStats().Transactions)), "{transaction}", "Merged transactions committed");
        Meter.CreateObservableCounter("ravenlite.storage.commits", () => Observe(m => m.PerDatabase(db => db.Environment.GetStats().Commits)), "{commit}", "Storage transactions committed");
        Meter.CreateObservableCounter("ravenlite.storage.journal.bytes", () => Observe(m => m.PerDatabase(db => db.Environment.GetStats().JournalBytesWritten)), "By", "Journal bytes written");
        Meter.CreateObservableCounter("ravenlite.storage.flushes", () => Observe(m => m.PerDatabase(db => db.Environment.GetStats().Flushes)), "{flush}", "Flushes of committed pages to the data file");
        Meter.CreateObservableGauge("ravenlite.storage.flush.lag", () => Observe(m => m.PerDatabase(db => db.Environment.GetStats() is var s ? s.LastCommittedTxId - s.LastSyncedTxId : 0)), "{transaction}", "Committed transactions not yet flushed to the data file");
        Meter.CreateObservableGauge("ravenlite.storage.data.size", () => Observe(m => m.PerDatabase(db => db.Environment.GetStats().DataFileBytes)), "By", "Data file size");
        Meter.CreateObservableGauge("ravenlite.storage.disk_full", () => Observe(m => m.PerDatabase(db => db.Environment.DiskFull != null ? 1 : 0)), "{state}", "1 while the disk is full for the database: writes are refused (507) or flushes wait, until space is freed");
        Meter.CreateObservableGauge("ravenlite.index.disk_full", () => Observe(m => m.PerIndex((_, index, _) => index.DiskFull ? 1 : 0)), "{state}", "1 while an index is paused for want of disk space");
        Meter.CreateObservableGauge("ravenlite.index.lag", () => Observe(m => m.PerIndex((_, index, tx) => IndexLag(index, tx))), "{etag}", "How far an index is behind its collections (etags)");
        Meter.CreateObservableGauge("ravenlite.replication.lag", () => Observe(m => m.PerReplicationTask((db, sender, last) => Math.Max(0, last - Math.Max(0, sender.LastAcknowledgedEtag)))), "{etag}", "How far a replication destination is behind its source (etags not yet acknowledged)");
        Meter.CreateObservableGauge("ravenlite.replication.connected", () => Observe(m => m.PerReplicationTask((_, sender, _) => sender.Status == "Active" ? 1 : 0)), "{state}", "1 while a replication task is connected to its destination, 0 while it reconnects (its error is in /databases/{db}/tasks)");
        Meter.CreateObservableGauge("ravenlite.etl.lag", () => Observe(m => m.PerEtlTransformation(p => p.Lag().Etags)), "{etag}", "How far an ETL transformation is behind its database (etags not yet loaded)");
        Meter.CreateObservableGauge("ravenlite.etl.running", () => Observe(m => m.PerEtlTransformation(p => p.State == "Running" ? 1 : 0)), "{state}", "1 while an ETL transformation loads, 0 while it retries its destination or is stopped by a script error (its error is in /databases/{db}/tasks)");
        Meter.CreateObservableCounter("ravenlite.etl.loaded", () => Observe(m => m.PerEtlTransformation(p => p.Loaded)), "{document}", "Documents and deletions an ETL transformation loaded since the server started");
        Meter.CreateObservableCounter("ravenlite.index.documents", () => Observe(m => m.PerIndex((_, index, _) => index.MapCounts.Attempts)), "{document}", "Documents an index mapped");
    }

    public ServerMetrics(DatabaseRegistry registry)
    {
        _registry = registry;
        lock (Live)
            Live.Add(this);
    }

    /// <summary>The measurements of every live server.</summary>
    private static List<Measurement<long>> Observe(Func<ServerMetrics, List<Measurement<long>>> read)
    {
        ServerMetrics[] live;
        lock (Live)
            live = [.. Live];
        var all = new List<Measurement<long>>();
        foreach (var server in live)
            all.AddRange(read(server));
        return all;
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
            // One series per database or per index: OpenTelemetry keeps 2,000 per instrument by default and folds the rest
            // into one otel_metric_overflow series, which would hide the gauges of a server with more (databases × indexes).
            .AddView(i => i.Meter.Name == MeterName ? new MetricStreamConfiguration { CardinalityLimit = MaxSeries } : null)
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

    /// <summary>One measurement per enabled replication task of every open database, tagged with the database and task name.</summary>
    private List<Measurement<long>> PerReplicationTask(Func<Database, Replication.ReplicationSender, long, long> read)
    {
        var measurements = new List<Measurement<long>>();
        ForEachOpen(db =>
        {
            long last = LastEtag(db);
            foreach (var sender in db.Replication.Senders)
                measurements.Add(new Measurement<long>(read(db, sender, last), new KeyValuePair<string, object?>("database", db.Name), new KeyValuePair<string, object?>("task", sender.Task.Name)));
        });
        return measurements;
    }

    /// <summary>One measurement per running ETL transformation of every open database, tagged with the database, task and transformation.</summary>
    private List<Measurement<long>> PerEtlTransformation(Func<Etl.EtlProcess, long> read)
    {
        var measurements = new List<Measurement<long>>();
        ForEachOpen(db =>
        {
            foreach (var p in db.Etl.Processes)
                measurements.Add(new Measurement<long>(read(p), new KeyValuePair<string, object?>("database", db.Name), new KeyValuePair<string, object?>("task", p.Task.Name),
                    new KeyValuePair<string, object?>("transformation", p.Transformation.Name)));
        });
        return measurements;
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
            catch (Exception e) when (e is DomainException or ObjectDisposedException)
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

    public void Dispose()
    {
        lock (Live)
            Live.Remove(this);
    }
}
