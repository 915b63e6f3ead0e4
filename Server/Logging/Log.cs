namespace RavenLite.Server.Logging;

/// <summary>Every server log message, as source-generated LoggerMessage methods.</summary>
internal static partial class Log
{
    [LoggerMessage(1, LogLevel.Information, "RavenLite listening on {Urls}")]
    public static partial void Listening(ILogger logger, string urls);

    [LoggerMessage(2, LogLevel.Information, "RavenLite options:\n{Options}")]
    public static partial void Options(ILogger logger, string options);

    [LoggerMessage(3, LogLevel.Warning, "Skipping {Dir}: unreadable database record: {Message}")]
    public static partial void SkippingDatabase(ILogger logger, string dir, string message);

    [LoggerMessage(4, LogLevel.Information, "Created database {Name} in {Dir}")]
    public static partial void Created(ILogger logger, string name, string dir);

    [LoggerMessage(5, LogLevel.Information, "Deleted database {Name}")]
    public static partial void Deleted(ILogger logger, string name);

    [LoggerMessage(6, LogLevel.Information, "Opened database {Name} in {Ms} ms: storage {StorageMs} ms (recovered {Count} journal records), indexes {IndexesMs} ms")]
    public static partial void Opened(ILogger logger, string name, long ms, long storageMs, int count, long indexesMs);

    [LoggerMessage(7, LogLevel.Information, "Closed database {Name}")]
    public static partial void Closed(ILogger logger, string name);

    [LoggerMessage(8, LogLevel.Error, "{Method} {Path} failed")]
    public static partial void RequestFailed(ILogger logger, Exception exception, string method, string path);

    [LoggerMessage(9, LogLevel.Debug, "{Method} {Path}: {Status} {Message}")]
    public static partial void RequestRejected(ILogger logger, string method, string path, int status, string message);

    [LoggerMessage(10, LogLevel.Error, "Index {Name}: indexing failed (the worker retries)")]
    public static partial void IndexingFailed(ILogger logger, Exception exception, string name);

    [LoggerMessage(11, LogLevel.Warning, "Index {Name}: storage reset, rebuilding from the documents ({Reason})")]
    public static partial void IndexRebuilt(ILogger logger, string name, string reason);

    [LoggerMessage(12, LogLevel.Information, "Index {Name} created ({Type})")]
    public static partial void IndexCreated(ILogger logger, string name, string type);

    [LoggerMessage(13, LogLevel.Warning, "Index folder {Folder} skipped: {Reason}")]
    public static partial void IndexSkipped(ILogger logger, string folder, string reason);

    [LoggerMessage(40, LogLevel.Information, "RavenLite stopping: no new requests; closing the databases")]
    public static partial void Stopping(ILogger logger);

    [LoggerMessage(41, LogLevel.Information, "RavenLite stopped cleanly: {Count} open database(s) closed, their mergers drained and journals synced")]
    public static partial void Stopped(ILogger logger, int count);

    [LoggerMessage(50, LogLevel.Information, "Database {Database}: {Action} {Count} document(s) whose @expires/@refresh time passed")]
    public static partial void ExpirationRound(ILogger logger, string database, string action, int count);

    [LoggerMessage(51, LogLevel.Warning, "Database {Database}: a timed task (expiration, refresh, time-series policies) failed; it is retried on the next round")]
    public static partial void TimedTaskFailed(ILogger logger, Exception exception, string database);

    [LoggerMessage(52, LogLevel.Information, "Database {Database}: deleted {Count} compare-exchange value(s) whose @expires time passed")]
    public static partial void CompareExchangeExpired(ILogger logger, string database, int count);

    [LoggerMessage(53, LogLevel.Debug, "A subscription worker's TCP connection ended: {Reason}")]
    public static partial void SubscriptionConnectionEnded(ILogger logger, string reason);

    [LoggerMessage(105, LogLevel.Error, "A TCP connection failed unexpectedly (closed)")]
    public static partial void TcpConnectionFailed(ILogger logger, Exception exception);

    [LoggerMessage(60, LogLevel.Information, "Database {Database}: backup written to {Path} (incremental: {Incremental}, {Bytes} bytes, {Milliseconds} ms)")]
    public static partial void BackupWritten(ILogger logger, string database, string path, bool incremental, long bytes, long milliseconds);

    [LoggerMessage(61, LogLevel.Warning, "Database {Database}: backup task {Task} failed: {Reason}")]
    public static partial void BackupFailed(ILogger logger, string database, string task, string reason);

    [LoggerMessage(62, LogLevel.Information, "Database {Database} restored from {Folder}: {Files} backup file(s), transaction {TxId}")]
    public static partial void Restored(ILogger logger, string database, string folder, int files, long txId);

    [LoggerMessage(70, LogLevel.Information, "Server certificate reloaded: {Subject} ({Thumbprint}), valid until {NotAfter:u}")]
    public static partial void CertificateReloaded(ILogger logger, string subject, string thumbprint, DateTime notAfter);

    [LoggerMessage(71, LogLevel.Warning, "Server certificate files changed but do not load, the previous certificate stays: {Reason}")]
    public static partial void CertificateReloadFailed(ILogger logger, string reason);

    [LoggerMessage(72, LogLevel.Warning, "RavenLite is UNSECURED on {Url}, a non-loopback address: anyone who can reach it can read, change and delete every database (AllowUnsecuredNonLoopback=true). Configure Security:Certificate:Path to require client certificates.")]
    public static partial void UnsecuredNonLoopback(ILogger logger, string url);

    [LoggerMessage(73, LogLevel.Information, "Secured: HTTPS with {Subject} ({Thumbprint}); client certificates required; {Registered} registered, {WellKnown} well-known admin thumbprint(s)")]
    public static partial void Secured(ILogger logger, string subject, string thumbprint, int registered, int wellKnown);

    [LoggerMessage(74, LogLevel.Information, "Certificate {Name} ({Thumbprint}) {Action} with clearance {Clearance}")]
    public static partial void CertificateChanged(ILogger logger, string name, string thumbprint, string action, string clearance);

    [LoggerMessage(75, LogLevel.Warning, "Database {Name} stopped after a storage failure ({Reason}); reopening it to recover from its journal")]
    public static partial void ReopeningFailed(ILogger logger, string name, string reason);

    [LoggerMessage(80, LogLevel.Warning, "Replication into database {Database} from {Source} stopped: {Reason}")]
    public static partial void ReplicationReceiveFailed(ILogger logger, string database, string source, string reason);

    [LoggerMessage(81, LogLevel.Warning, "Replication of database {Database} to {Destination} failed (retrying): {Reason}")]
    public static partial void ReplicationSendFailed(ILogger logger, string database, string destination, string reason);

    [LoggerMessage(82, LogLevel.Information, "Replication of database {Database} to {Destination} connected; resuming after etag {Etag}")]
    public static partial void ReplicationConnected(ILogger logger, string database, string destination, long etag);

    [LoggerMessage(90, LogLevel.Information, "Cluster leader is now {Leader}")]
    public static partial void ClusterLeaderChanged(ILogger logger, string leader);

    [LoggerMessage(91, LogLevel.Information, "Cluster node {Tag} added: {Url} (Raft {RaftEndPoint})")]
    public static partial void ClusterNodeAdded(ILogger logger, string tag, string url, string raftEndPoint);

    [LoggerMessage(92, LogLevel.Information, "Standing by as node {Tag} (Raft {RaftEndPoint}) until the leader adds this node")]
    public static partial void ClusterStandingBy(ILogger logger, string tag, string raftEndPoint);

    [LoggerMessage(93, LogLevel.Warning, "This node could not record itself as the first node of its new cluster: {Reason}")]
    public static partial void ClusterBootstrapFailed(ILogger logger, string reason);

    [LoggerMessage(94, LogLevel.Warning, "Could not bring this node's database instances in line with their groups (retrying): {Reason}")]
    public static partial void DatabaseGroupsFailed(ILogger logger, string reason);

    [LoggerMessage(95, LogLevel.Warning, "Cluster observer: database {Database}'s node {Tag} is now {State}")]
    public static partial void ClusterMemberState(ILogger logger, string database, string tag, string state);

    [LoggerMessage(96, LogLevel.Warning, "Cluster observer failed (retrying): {Reason}")]
    public static partial void ClusterObserverFailed(ILogger logger, string reason);

    [LoggerMessage(97, LogLevel.Error, "Cluster-wide transaction at Raft index {Index} is not applied on this member (its documents come by replication): {Reason}")]
    public static partial void ClusterTransactionSkipped(ILogger logger, long index, string reason);

    [LoggerMessage(98, LogLevel.Error, "Database {Database}: change {Kind} of its record at Raft index {Index} is not applied on this member: {Reason}")]
    public static partial void RecordChangeSkipped(ILogger logger, string database, string kind, long index, string reason);

    [LoggerMessage(99, LogLevel.Information, "Cluster peer {Url} added as node {Tag}")]
    public static partial void ClusterPeerAdded(ILogger logger, string url, string tag);

    [LoggerMessage(100, LogLevel.Warning, "Cluster peer {Url} not added yet (trying again): {Reason}")]
    public static partial void ClusterPeerNotAdded(ILogger logger, string url, string reason);

    [LoggerMessage(101, LogLevel.Warning, "Could not bring this node's certificates and client configuration in line with the cluster's (retrying at the next change): {Reason}")]
    public static partial void ServerItemsFailed(ILogger logger, string reason);

    [LoggerMessage(102, LogLevel.Warning, "Encrypted database '{Database}' is placed on node {Node}, which holds no key for it: it is created here once its key is distributed (POST /admin/secrets/distribute?name={Database}&node={Node})")]
    public static partial void EncryptedDatabaseWaitsForKey(ILogger logger, string database, string node);

    [LoggerMessage(103, LogLevel.Warning, "ETL {Task}/{Transformation} of database {Database} could not load a batch (retrying): {Reason}")]
    public static partial void EtlLoadFailed(ILogger logger, string database, string task, string transformation, string reason);

    [LoggerMessage(104, LogLevel.Error, "ETL {Task}/{Transformation} of database {Database} stopped: {Reason}")]
    public static partial void EtlStopped(ILogger logger, string database, string task, string transformation, string reason);
}
