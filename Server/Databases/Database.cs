using RavenLite.Server.Documents;
using RavenLite.Server.Operations;
using RavenLite.Server.TransactionMerger;
using RavenLite.Storage;

namespace RavenLite.Server.Databases;

/// <summary>
/// One open database: its storage environment under <c>{DataDir}/Databases/{name}/</c>, the document
/// layer, the write merger and the operations table. Requests hold a lease
/// (<see cref="TryAcquire"/>) so deletion and shutdown wait for in-flight reads before unmapping.
/// </summary>
public sealed class Database : IDisposable
{
    /// <summary>The server's options (a hot endpoint reads them here: <c>HttpContext.RequestServices</c> would create a DI scope per request).</summary>
    internal Configuration.ServerOptions Options { get; }

    private int _leases;
    private volatile bool _closing;
    private readonly CancellationTokenSource _closingSource = new();

    /// <summary>Canceled when the database starts closing: long-lived work holding a lease (an incoming replication connection) ends on it.</summary>
    public CancellationToken Closing => _closingSource.Token;

    internal Database(string name, string directory, Configuration.ServerOptions options, ILogger logger, Replication.IReplicationConnector? replicationConnector = null,
        Indexing.Analysis.CustomAnalysis? serverAnalysis = null, DatabaseKeys? keys = null)
    {
        Options = options;
        Name = name;
        Directory = directory;
        DatabaseCompaction.Recover(directory);
        Record = File.Exists(Path.Combine(directory, DatabaseRecordFile.FileName)) ? DatabaseRecordFile.Read(directory) : new DatabaseRecordFile { DatabaseName = name };
        Analysis = new Indexing.Analysis.CustomAnalysis(() => Record.Analyzers, () => Record.Sorters, serverAnalysis);
        var settings = Record.Settings;
        long started = System.Diagnostics.Stopwatch.GetTimestamp();
        EncryptionKey = Record.Encrypted
            ? keys?.KeyFor(name) ?? throw new UnavailableException(RavenExceptionTypes.DatabaseLoadFailure,
                $"Database '{name}' is encrypted and this server holds no key for it: distribute its key (POST /admin/secrets/distribute?name={name}&node={options.NodeTag}).")
            : null;
        try
        {
            Environment = StorageEnvironment.Open(new StorageOptions
            {
                Directory = Path.Combine(directory, "storage"),
                Durability = settings.TryGetValue("Durability", out var d) ? Enum.Parse<DurabilityMode>(d, ignoreCase: true) : options.Durability,
                EncryptionKey = EncryptionKey,
            });
        }
        catch (StorageEncryptionException e)
        {
            EncryptionKey?.Dispose();
            throw new UnavailableException(RavenExceptionTypes.DatabaseLoadFailure, $"Database '{name}' cannot be opened: {e.Message}");
        }
        try
        {
            Documents = new DocumentsStorage(Environment, options.MaxIdBytes, options.NodeTag);
            RegisterExtensions(Documents);
            RemoveUnfinishedUploads();
            Merger = new WriteMerger(Documents, name,
                settings.TryGetValue("MergerMaxOperations", out var ops) ? int.Parse(ops, System.Globalization.CultureInfo.InvariantCulture) : options.MergerMaxOperations,
                settings.TryGetValue("MergerMaxBytes", out var bytes) ? int.Parse(bytes, System.Globalization.CultureInfo.InvariantCulture) : options.MergerMaxBytes);
            long storageDone = System.Diagnostics.Stopwatch.GetTimestamp();
            Indexes = new Indexing.IndexStore(this, logger);
            OpenTimes = ((long)System.Diagnostics.Stopwatch.GetElapsedTime(started, storageDone).TotalMilliseconds, (long)System.Diagnostics.Stopwatch.GetElapsedTime(storageDone).TotalMilliseconds);
            Subscriptions = new Subscriptions.SubscriptionManager(this);
            Ownership.Changed += Subscriptions.OwnershipChanged;
            var connector = replicationConnector ?? new Replication.PlainReplicationConnector();
            Replication = new Replication.ReplicationService(this, connector, logger);
            Etl = new Etl.EtlService(this, connector, logger);
            Merger.Committed = () =>
            {
                Indexes.NotifyAll();
                Subscriptions.NotifyWrites();
                Replication.NotifyWrites();
                Etl.NotifyWrites();
            };
            Operations.OnFinished = state =>
            {
                if (!Documents.Changes.Listening)
                    return;
                var json = new System.Buffers.ArrayBufferWriter<byte>(256);
                using (var w = new System.Text.Json.Utf8JsonWriter(json))
                    OperationStateJson.Write(w, state);
                Documents.Changes.Publish(new Changes.ChangeEvent(Changes.ChangeKind.Operation, "", Value: state.Id, State: json.WrittenSpan.ToArray()));
            };
            Tasks = new TimedTasks(this, logger);
            Backups = new Backups.BackupService(this, logger);
        }
        catch
        {
            Merger?.Dispose();
            Environment.Dispose();
            EncryptionKey?.Dispose();
            throw;
        }
    }

    /// <summary>
    /// The document extensions, each keeping what it stores beside documents in step with their writes. The order is
    /// the order of their work inside a put or delete: a delete's revision is stored after the document's counters,
    /// attachments and series are gone.
    /// </summary>
    private static void RegisterExtensions(DocumentsStorage documents)
    {
        using var tx = documents.Environment.ReadTransaction();
        documents.Register(new Expiration.ExpirationExtension(tx));
        documents.Register(new Counters.CountersExtension());
        documents.Register(new Attachments.AttachmentsExtension());
        documents.Register(new TimeSeries.TimeSeriesExtension(tx));
        documents.Register(new Revisions.RevisionsExtension(tx));
        documents.Register(new CompareExchange.AtomicGuardsExtension());
    }

    /// <summary>The key of an encrypted database (its storage and index files are sealed with it); null for an unencrypted one.</summary>
    public Storage.Encryption.EncryptionKey? EncryptionKey { get; }

    /// <summary>The revisions configuration and its hooks.</summary>
    public Revisions.RevisionsExtension Revisions => Documents.Extension<Revisions.RevisionsExtension>();

    /// <summary>The expiration and refresh configurations and their hooks.</summary>
    public Expiration.ExpirationExtension Expiration => Documents.Extension<Expiration.ExpirationExtension>();

    /// <summary>The time-series configuration and its hooks.</summary>
    public TimeSeries.TimeSeriesExtension TimeSeries => Documents.Extension<TimeSeries.TimeSeriesExtension>();

    /// <summary>
    /// Writes the configurations the database holds as RavenDB's record names them — <c>Revisions</c>, <c>Expiration</c>,
    /// <c>Refresh</c>, <c>TimeSeries</c> (null when not set) — for the record's answer and the dump's DatabaseRecord.
    /// </summary>
    public void WriteConfigurations(Utf8JsonWriter w)
    {
        ArgumentNullException.ThrowIfNull(w);
        w.WritePropertyName(nameof(Revisions)); // RavenDB's record names them as this database's parts are named
        if (Revisions.Configuration is { } revisions)
            revisions.Write(w);
        else
            w.WriteNullValue();
        w.WritePropertyName(nameof(Expiration));
        if (Expiration.Expiration is { } expiration)
            expiration.Write(w, "DeleteFrequencyInSec");
        else
            w.WriteNullValue();
        w.WritePropertyName("Refresh");
        if (Expiration.Refresh is { } refresh)
            refresh.Write(w, "RefreshFrequencyInSec");
        else
            w.WriteNullValue();
        w.WritePropertyName(nameof(TimeSeries));
        if (TimeSeries.Configuration is { } series)
            series.Write(w);
        else
            w.WriteNullValue();
    }

    /// <summary>The custom analyzers and sorters this database's indexes and queries may name: its record's, then the server's.</summary>
    public Indexing.Analysis.CustomAnalysis Analysis { get; }

    /// <summary>The record file as last written (settings, client configuration); replaced by <see cref="DatabaseRegistry.UpdateRecord"/>.</summary>
    public DatabaseRecordFile Record { get; internal set; }

    /// <summary>Changes this database's record file (read afresh, changed, written atomically) and its in-memory copy.</summary>
    internal void UpdateRecord(Action<DatabaseRecordFile> change)
    {
        lock (_recordLock)
        {
            var record = DatabaseRecordFile.Read(Directory);
            change(record);
            record.Write(Directory);
            Record = record;
        }
    }

    private readonly object _recordLock = new();

    /// <summary>How long opening took: the storage environment (journal recovery included) and then the indexes (opened, C# ones compiled or loaded).</summary>
    public (long StorageMs, long IndexesMs) OpenTimes { get; }

    /// <summary>The name in the casing it was created with.</summary>
    public string Name { get; }

    /// <summary>Attachment contents staged by uploads cut short (a crash mid-upload) are removed when the database opens.</summary>
    private void RemoveUnfinishedUploads()
    {
        using (var read = Environment.ReadTransaction())
            if (read.ReadTree(Attachments.AttachmentsStore.UploadsTree) is not { Count: > 0 })
                return;
        using var tx = Environment.WriteTransaction();
        Attachments.AttachmentsStore.RemoveUnfinishedUploads(tx);
        tx.Commit();
    }

    /// <summary>The database's folder.</summary>
    public string Directory { get; }

    /// <summary>Its storage environment.</summary>
    public StorageEnvironment Environment { get; }

    /// <summary>Documents on top of the environment.</summary>
    public DocumentsStorage Documents { get; }

    /// <summary>Where every write goes.</summary>
    public WriteMerger Merger { get; }

    /// <summary>The database's indexes and their workers.</summary>
    public Indexing.IndexStore Indexes { get; } = null!;

    /// <summary>Data subscriptions: definitions, positions and connected workers.</summary>
    public Subscriptions.SubscriptionManager Subscriptions { get; } = null!;

    /// <summary>Replication: connection strings, external replication tasks and their senders, incoming sources, write assurance.</summary>
    public Replication.ReplicationService Replication { get; } = null!;

    /// <summary>ETL: SQL connection strings, Raven and SQL ETL tasks and their running transformations.</summary>
    public Etl.EtlService Etl { get; } = null!;

    /// <summary>Timed background work: expiration, refresh, time-series policies.</summary>
    public TimedTasks Tasks { get; } = null!;

    /// <summary>Backups: periodic tasks, their statuses and backups started by hand.</summary>
    public Backups.BackupService Backups { get; } = null!;

    /// <summary>Which member of the database's group runs each ongoing task (all of them on a single server).</summary>
    public TaskOwnership Ownership { get; } = new();

    /// <summary>Long-running operations (bulk inserts) and their states.</summary>
    public OperationsTable Operations { get; } = new();

    /// <summary>Takes a lease for one request; false once the database is closing.</summary>
    public bool TryAcquire()
    {
        Interlocked.Increment(ref _leases);
        if (!_closing)
            return true;
        Interlocked.Decrement(ref _leases);
        return false;
    }

    /// <summary>True for the first caller only: that one arranges the reopen of a failed database (<see cref="DatabaseRegistry"/>).</summary>
    internal bool TryClaimReopen() => Interlocked.Exchange(ref _reopenClaimed, 1) == 0;

    private int _reopenClaimed;

    /// <summary>Returns a lease taken by <see cref="TryAcquire"/>.</summary>
    public void Release() => Interlocked.Decrement(ref _leases);

    /// <summary>
    /// Refuses new requests, cancels running operations, waits (up to 30 s) for in-flight ones,
    /// drains the merger, flushes and closes storage.
    /// </summary>
    public void Dispose()
    {
        if (_closing)
            return;
        _closing = true;
        _closingSource.Cancel();
        Operations.CancelAll();
        Documents.Changes.CloseAll("The database is closing.");
        Subscriptions.DropAll();
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (Volatile.Read(ref _leases) > 0 && DateTime.UtcNow < deadline)
            Thread.Sleep(5);
        Etl.Dispose();
        Replication.Dispose();
        Backups.Dispose();
        Tasks.Dispose();
        Merger.Dispose();
        Indexes.Dispose();
        Documents.Changes.Dispose();
        Environment.Dispose();
        EncryptionKey?.Dispose();
        _closingSource.Dispose();
    }
}
