using System.Net;
using RavenLite.Storage;

namespace RavenLite.Server.Configuration;

/// <summary>
/// Server settings. Sources, later wins: appsettings.json, environment variables with the
/// <c>RAVENLITE_</c> prefix (<c>RAVENLITE_DataDir</c>), command line (<c>--DataDir ./x</c>).
/// Validated once at start-up (<see cref="Validate"/>); printed by <see cref="Describe"/>.
/// </summary>
public sealed class ServerOptions
{
    /// <summary>Where databases live (<c>{DataDir}/Databases/{name}/</c>). Default <c>./data</c>, relative to the working directory.</summary>
    public string DataDir { get; set; } = "data";

    /// <summary>
    /// The one address Kestrel listens on. Default <c>http://127.0.0.1:8080</c>; port 0 picks a free port. <c>https://</c>
    /// exactly when <see cref="Security"/> names a server certificate (a secured server has no plain-HTTP endpoint).
    /// </summary>
    public string ServerUrl { get; set; } = "http://127.0.0.1:8080";

    /// <summary>
    /// Allows an unsecured server (no <c>Security:Certificate:Path</c>) on a non-loopback address, with a warning at every
    /// start. Default false: such a binding is refused at start-up.
    /// </summary>
    public bool AllowUnsecuredNonLoopback { get; set; }

    /// <summary>TLS and client-certificate authentication (<c>Security:Certificate:Path</c>, <c>Security:WellKnownAdminCertificates</c>; docs/security.md).</summary>
    public SecurityOptions Security { get; set; } = new();

    /// <summary>
    /// The TCP port data subscription workers connect to (RavenDB's clients ask <c>/info/tcp</c> for it), on the host of
    /// <see cref="ServerUrl"/>. Default 0: a free port, chosen at start-up.
    /// </summary>
    public int TcpPort { get; set; }

    /// <summary>
    /// This server's node tag: one to four upper-case letters (A, B, C…), the tag of the change-vector entries its
    /// databases write and of the ids it generates. Default A. Servers that replicate to each other need different tags.
    /// </summary>
    public string NodeTag { get; set; } = "A";

    /// <summary>
    /// The TCP port of this node's Raft (the cluster's consensus, docs/cluster.md). Default 0: a free port picked on the
    /// first start and kept in the data directory (the other nodes know it by then).
    /// </summary>
    public int RaftPort { get; set; }

    /// <summary>The Raft election timeout's lower bound, in ms (the upper one is twice it). Default 300.</summary>
    public int RaftElectionTimeoutMs { get; set; } = 300;

    /// <summary>How long a database group's member may stay unreachable before the cluster observer moves it to Rehab, in seconds. Default 60 (RavenDB's).</summary>
    public int ClusterRehabDelaySeconds { get; set; } = 60;

    /// <summary>
    /// The URLs of the servers this node adds to its cluster while it leads (comma-separated; default none: nodes join
    /// through <c>PUT /admin/cluster/node</c>). Start the other servers plain, and this one with them as its peers.
    /// </summary>
    public string ClusterPeers { get; set; } = "";

    /// <summary>The peers of <see cref="ClusterPeers"/>, without trailing slashes.</summary>
    public IReadOnlyList<string> ClusterPeerUrls =>
        [.. ClusterPeers.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries).Select(u => u.TrimEnd('/'))];

    /// <summary>
    /// Whether compare-exchange reads of a group's database wait on Raft's read barrier (default true: linearizable).
    /// false serves them from whatever this node has applied — stale on a lagging follower; a diagnostic that exists so
    /// the linearizability checker can be shown to catch it (docs/cluster.md "Failure model"), never for production.
    /// </summary>
    public bool ClusterReadBarrier { get; set; } = true;

    /// <summary>How long a replication connection may stay silent (no batch, heartbeat or acknowledgement) before either side drops it and the sender reconnects. Default 15 s.</summary>
    public int ReplicationHeartbeatTimeoutSeconds { get; set; } = 15;

    /// <summary>The most items one replication batch carries (a transaction is never split, so a batch may hold more to finish one). Default 1024.</summary>
    public int ReplicationBatchItems { get; set; } = 1024;

    /// <summary>The most document bytes one replication batch carries (the same exception for transactions). Default 4 MiB.</summary>
    public int ReplicationBatchBytes { get; set; } = 4 << 20;

    /// <summary>The most changes one ETL batch extracts and transforms before it loads them (docs/etl.md "Running"). Default 8192.</summary>
    public int EtlBatchItems { get; set; } = 8192;

    /// <summary>The most time one ETL batch spends extracting and transforming before it loads what it has. Default 500 ms.</summary>
    public int EtlBatchMilliseconds { get; set; } = 500;

    /// <summary>Metrics with OpenTelemetry at <c>GET /metrics</c> (Prometheus format). Default true.</summary>
    public bool Metrics { get; set; } = true;

    /// <summary>The Studio at <c>/studio/</c> (and <c>GET /</c> from a browser redirected there). Default true.</summary>
    public bool Studio { get; set; } = true;

    /// <summary>Console logs as JSON objects, one per line (timestamp, level, category, message, trace and span ids). Default false: one plain line each.</summary>
    public bool JsonLogs { get; set; }

    /// <summary>A patch script (PATCH, patch by query) may run at most this many statements per document (default 100,000); beyond, the patch stops and changes nothing.</summary>
    public int PatchMaxStatements { get; set; } = 100_000;

    /// <summary>A patch script may run at most this long per document, in milliseconds (default 2,000).</summary>
    public int PatchTimeoutMs { get; set; } = 2_000;

    /// <summary>Journal durability of every database (<c>Sync</c> default: a 2xx answer means the write is on stable storage).</summary>
    public DurabilityMode Durability { get; set; } = DurabilityMode.Sync;

    /// <summary>Largest accepted document, in bytes of JSON (default 16 MiB). Larger ones get 413.</summary>
    public int MaxDocumentBytes { get; set; } = 16 << 20;

    /// <summary>Largest accepted request body other than bulk insert, in bytes (default 64 MiB). Larger ones get 413.</summary>
    public long MaxRequestBodyBytes { get; set; } = 64L << 20;

    /// <summary>Largest accepted attachment, in bytes (default 16 GiB). Larger ones get 413 and nothing is stored.</summary>
    public long MaxAttachmentBytes { get; set; } = 16L << 30;

    /// <summary>Longest document id, in UTF-8 bytes (default 512). Longer ones get 400.</summary>
    public int MaxIdBytes { get; set; } = 512;

    /// <summary>The merger closes a transaction after this many operations (default 1024).</summary>
    public int MergerMaxOperations { get; set; } = 1024;

    /// <summary>The merger closes a transaction after this many bytes of documents (default 16 MiB).</summary>
    public int MergerMaxBytes { get; set; } = 16 << 20;

    /// <summary>Bulk insert hands a batch to the merger at this many bytes of documents (default 4 MiB).</summary>
    public int BulkInsertBatchBytes { get; set; } = 4 << 20;

    /// <summary>Bulk insert hands a batch to the merger at this many documents (default 8192).</summary>
    public int BulkInsertBatchDocuments { get; set; } = 8192;

    /// <summary>Most client connections open at once (default 4,096; WebSocket connections of the changes API count apart, with the same limit). Beyond, new connections are closed at once.</summary>
    public int MaxConnections { get; set; } = 4096;

    /// <summary>A client must send its whole request line and headers within this many seconds of starting a request (default 10); beyond, the connection is closed (slowloris).</summary>
    public int RequestHeadersTimeoutSeconds { get; set; } = 10;

    /// <summary>
    /// Slowest accepted transfer, in bytes per second, of a request body and of a response a client reads (default 240):
    /// a client sending or reading slower than this for longer than <see cref="MinDataRateGraceSeconds"/> is dropped.
    /// A bulk insert stream has no size limit but is bounded by this (a silent stream is dropped).
    /// </summary>
    public int MinDataRateBytesPerSecond { get; set; } = 240;

    /// <summary>
    /// Memory, in MiB, that requests may hold at once for the results and answers they build in memory (queries,
    /// JSON answers, multi_get); a request that would go past it gets 503 LowMemoryException (Http/MemoryBudget.cs).
    /// Default: a quarter of the memory the process may use, at least 256.
    /// </summary>
    public int MemoryBudgetMB { get; set; } = (int)Math.Max(256, GC.GetGCMemoryInfo().TotalAvailableMemoryBytes / 4 >> 20);

    /// <summary>A client that reads nothing of a streamed answer (streams, export) for this many seconds is dropped (default 60).</summary>
    public int StalledClientSeconds { get; set; } = 60;

    /// <summary>How long a transfer may stay below <see cref="MinDataRateBytesPerSecond"/> before the client is dropped (default 5 s).</summary>
    public int MinDataRateGraceSeconds { get; set; } = 5;

    /// <summary>A bulk insert stream that sends nothing — not even a heartbeat item — for this many seconds is dropped (default 120; RavenDB's clients send a heartbeat after 40 s of silence, this one's after 15 s).</summary>
    public int BulkInsertIdleSeconds { get; set; } = 120;

    /// <summary>Bulk insert hands a partial batch over after the network has been quiet this long, in milliseconds (default 2).</summary>
    public int BulkInsertQuietMs { get; set; } = 2;

    /// <summary>Variables of the repository's tools, not settings: the test seed, crash rounds, deploy work dir, the Studio's dev proxy and the compose port.</summary>
    private static readonly string[] ToolVariables = ["RAVENLITE_TEST_", "RAVENLITE_CRASH_", "RAVENLITE_DEPLOY_", "RAVENLITE_URL", "RAVENLITE_PORT"];

    /// <summary>
    /// Refuses setting names RavenLite does not know among <c>RAVENLITE_*</c> environment variables and <c>--Name</c>
    /// command-line switches (a misspelt setting would otherwise be ignored silently). <c>Logging:*</c> is ASP.NET
    /// Core's own.
    /// </summary>
    public static void CheckNames(string[] args)
    {
        var known = typeof(ServerOptions).GetProperties().Select(p => p.Name).Append("Logging").ToHashSet(StringComparer.OrdinalIgnoreCase);
        static string Head(string key) => key.Split([':', '_'], 2)[0].Split("__")[0];
        foreach (System.Collections.DictionaryEntry e in Environment.GetEnvironmentVariables())
        {
            string name = (string)e.Key;
            if (ToolVariables.Any(t => t.EndsWith('_') ? name.StartsWith(t, StringComparison.Ordinal) : name == t))
                continue;
            if (name.StartsWith("RAVENLITE_", StringComparison.OrdinalIgnoreCase) && !known.Contains(Head(name["RAVENLITE_".Length..].Replace("__", ":", StringComparison.Ordinal))))
                throw new InvalidOperationException($"Unknown setting {name}; the settings are {string.Join(", ", known.Order(StringComparer.Ordinal))} (docs/deployment.md).");
        }
        foreach (string a in args)
        {
            if (!a.StartsWith("--", StringComparison.Ordinal))
                continue;
            string key = a[2..].Split('=', 2)[0];
            if (!known.Contains(key.Split(':', 2)[0]))
                throw new InvalidOperationException($"Unknown setting --{key}; the settings are {string.Join(", ", known.Order(StringComparer.Ordinal))} (docs/deployment.md).");
        }
    }

    /// <summary>Checks every setting; throws with a message naming the setting and its valid range.</summary>
    public void Validate()
    {
        if (string.IsNullOrWhiteSpace(DataDir))
            throw new InvalidOperationException("DataDir must name a directory.");
        if (!Uri.TryCreate(ServerUrl, UriKind.Absolute, out var uri) || (uri.Scheme != Uri.UriSchemeHttp && uri.Scheme != Uri.UriSchemeHttps))
            throw new InvalidOperationException($"ServerUrl '{ServerUrl}' must be an absolute http:// or https:// URL such as http://127.0.0.1:8080.");
        if (Security.Secured && uri.Scheme != Uri.UriSchemeHttps)
            throw new InvalidOperationException($"ServerUrl '{ServerUrl}' is plain HTTP, but Security:Certificate:Path is set: a secured server listens on https:// only (for example https://127.0.0.1:8443).");
        if (!Security.Secured && uri.Scheme == Uri.UriSchemeHttps)
            throw new InvalidOperationException($"ServerUrl '{ServerUrl}' is https://, but no server certificate is set: set Security:Certificate:Path (and Security:Certificate:Password), see docs/security.md.");
        if (!Security.Secured && !IsLoopback(uri.Host) && !AllowUnsecuredNonLoopback)
            throw new InvalidOperationException(
                $"Refusing to listen on '{ServerUrl}': it is not a loopback address and no server certificate is set, so anyone who can reach it could read and change every database. " +
                "Set Security:Certificate:Path to require client certificates (docs/security.md), bind 127.0.0.1 / ::1, or set AllowUnsecuredNonLoopback=true if the network is trusted.");
        if (!string.IsNullOrEmpty(Security.WellKnownAdminCertificates) && Security.WellKnownAdminThumbprints.Any(t => t.Length != 40))
            throw new InvalidOperationException("Security:WellKnownAdminCertificates must be SHA-1 thumbprints (40 hex digits), separated by commas.");
        Check(RaftPort is >= 0 and <= 65535, "RaftPort must be 0..65535.");
        Check(RaftElectionTimeoutMs is >= 50 and <= 60_000, "RaftElectionTimeoutMs must be 50..60,000.");
        Check(ClusterRehabDelaySeconds is >= 1 and <= 86_400, "ClusterRehabDelaySeconds must be 1..86,400.");
        Check(ClusterPeerUrls.All(u => Uri.TryCreate(u, UriKind.Absolute, out var peer) && peer.Scheme is "http" or "https"), $"ClusterPeers must be http(s) URLs separated by commas (got '{ClusterPeers}').");
        Check(NodeTag.Length is >= 1 and <= 4 && NodeTag.All(char.IsAsciiLetterUpper), $"NodeTag '{NodeTag}' must be one to four upper-case letters (A, B, C…).");
        Check(ReplicationHeartbeatTimeoutSeconds is >= 2 and <= 3600, "ReplicationHeartbeatTimeoutSeconds must be 2..3,600.");
        Check(ReplicationBatchItems is >= 1 and <= 1_000_000, "ReplicationBatchItems must be 1..1,000,000.");
        Check(ReplicationBatchBytes >= 64 << 10, "ReplicationBatchBytes must be at least 64 KiB.");
        Check(EtlBatchItems is >= 1 and <= 1_000_000, "EtlBatchItems must be 1..1,000,000.");
        Check(EtlBatchMilliseconds is >= 10 and <= 600_000, "EtlBatchMilliseconds must be 10..600,000.");
        Check(MaxDocumentBytes is >= 1024 and <= 256 << 20, "MaxDocumentBytes must be 1 KiB..256 MiB.");
        Check(MaxRequestBodyBytes >= MaxDocumentBytes, "MaxRequestBodyBytes must be at least MaxDocumentBytes.");
        Check(MaxAttachmentBytes >= 0, "MaxAttachmentBytes must not be negative.");
        Check(MaxIdBytes is >= 16 and <= 1000, "MaxIdBytes must be 16..1000 (storage keys are at most 1024 bytes).");
        Check(MergerMaxOperations is >= 1 and <= 1_000_000, "MergerMaxOperations must be 1..1,000,000.");
        Check(MergerMaxBytes >= 64 << 10, "MergerMaxBytes must be at least 64 KiB.");
        Check(BulkInsertBatchBytes >= 64 << 10, "BulkInsertBatchBytes must be at least 64 KiB.");
        Check(BulkInsertBatchDocuments >= 1, "BulkInsertBatchDocuments must be at least 1.");
        Check(PatchMaxStatements is >= 100 and <= 100_000_000, "PatchMaxStatements must be 100..100,000,000.");
        Check(PatchTimeoutMs is >= 10 and <= 600_000, "PatchTimeoutMs must be 10..600,000 (ms).");
        Check(BulkInsertQuietMs is >= 0 and <= 1000, "BulkInsertQuietMs must be 0..1000.");
        Check(MaxConnections is >= 16 and <= 1_000_000, "MaxConnections must be 16..1,000,000.");
        Check(RequestHeadersTimeoutSeconds is >= 1 and <= 300, "RequestHeadersTimeoutSeconds must be 1..300.");
        Check(MinDataRateBytesPerSecond is >= 1 and <= 1_000_000, "MinDataRateBytesPerSecond must be 1..1,000,000.");
        Check(BulkInsertIdleSeconds is >= 1 and <= 86_400, "BulkInsertIdleSeconds must be 1..86,400.");
        Check(StalledClientSeconds is >= 1 and <= 3600, "StalledClientSeconds must be 1..3,600.");
        Check(MemoryBudgetMB >= 1, "MemoryBudgetMB must be at least 1.");
        Check(MinDataRateGraceSeconds is >= 2 and <= 300, "MinDataRateGraceSeconds must be 2..300 (Kestrel needs more than 1 s).");
    }

    private static void Check(bool ok, string message)
    {
        if (!ok)
            throw new InvalidOperationException(message);
    }

    /// <summary>True for localhost, 127.0.0.0/8 and ::1.</summary>
    public static bool IsLoopback(string host)
    {
        if (string.Equals(host, "localhost", StringComparison.OrdinalIgnoreCase))
            return true;
        return IPAddress.TryParse(host.Trim('[', ']'), out var ip) && IPAddress.IsLoopback(ip);
    }

    /// <summary>One line per setting, for the start-up log.</summary>
    public string Describe() =>
        $"""
        DataDir={Path.GetFullPath(DataDir)}
        ServerUrl={ServerUrl}
        AllowUnsecuredNonLoopback={AllowUnsecuredNonLoopback}
        Security:Certificate:Path={Security.Certificate.Path ?? "(none: unsecured)"} Security:Certificate:KeyPath={Security.Certificate.KeyPath ?? "(none)"} Security:Certificate:Password={(string.IsNullOrEmpty(Security.Certificate.Password) ? "(none)" : "(set)")} Security:WellKnownAdminCertificates={Security.WellKnownAdminThumbprints.Count}
        NodeTag={NodeTag} RaftPort={RaftPort} RaftElectionTimeoutMs={RaftElectionTimeoutMs} ClusterRehabDelaySeconds={ClusterRehabDelaySeconds} ClusterReadBarrier={ClusterReadBarrier} ClusterPeers={ClusterPeers} ReplicationHeartbeatTimeoutSeconds={ReplicationHeartbeatTimeoutSeconds} ReplicationBatchItems={ReplicationBatchItems} ReplicationBatchBytes={ReplicationBatchBytes} EtlBatchItems={EtlBatchItems} EtlBatchMilliseconds={EtlBatchMilliseconds}
        Durability={Durability}
        MaxDocumentBytes={MaxDocumentBytes} MaxRequestBodyBytes={MaxRequestBodyBytes} MaxIdBytes={MaxIdBytes}
        MergerMaxOperations={MergerMaxOperations} MergerMaxBytes={MergerMaxBytes}
        BulkInsertBatchBytes={BulkInsertBatchBytes} BulkInsertBatchDocuments={BulkInsertBatchDocuments} BulkInsertQuietMs={BulkInsertQuietMs}
        MaxConnections={MaxConnections} RequestHeadersTimeoutSeconds={RequestHeadersTimeoutSeconds} MinDataRateBytesPerSecond={MinDataRateBytesPerSecond} MinDataRateGraceSeconds={MinDataRateGraceSeconds} StalledClientSeconds={StalledClientSeconds} BulkInsertIdleSeconds={BulkInsertIdleSeconds} MemoryBudgetMB={MemoryBudgetMB}
        Metrics={Metrics} Studio={Studio} JsonLogs={JsonLogs} PatchMaxStatements={PatchMaxStatements} PatchTimeoutMs={PatchTimeoutMs}
        """;
}
