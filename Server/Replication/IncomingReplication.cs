namespace RavenLite.Server.Replication;

/// <summary>What a destination knows of one source that replicates into it (for stats and the Studio).</summary>
public sealed class IncomingReplication(string sourceDatabaseId, string sourceDatabaseName, string sourceUrl)
{
    private readonly object _lock = new();

    public string SourceDatabaseId { get; } = sourceDatabaseId;

    public string SourceDatabaseName { get; } = sourceDatabaseName;

    public string SourceUrl { get; } = sourceUrl;

    /// <summary>The source's last etag applied here.</summary>
    public long LastEtag { get; private set; }

    /// <summary>Items applied from this source since the server started, and of those the conflicts resolved.</summary>
    public long Applied { get; private set; }

    /// <summary>Conflicts resolved among <see cref="Applied"/>.</summary>
    public long Resolved { get; private set; }

    /// <summary>Versions from this source kept in conflict (no resolver settled them).</summary>
    public long Conflicted { get; private set; }

    /// <summary>When the source was last heard from (UTC).</summary>
    public DateTime LastHeard { get; private set; } = DateTime.UtcNow;

    /// <summary>True while its connection is open.</summary>
    public bool Connected { get; private set; } = true;

    /// <summary>Why its last connection failed here (null when it did not).</summary>
    public string? Error { get; private set; }

    internal void Received(long lastEtag, int applied, int resolved, int conflicted)
    {
        lock (_lock)
        {
            LastEtag = Math.Max(LastEtag, lastEtag);
            Applied += applied;
            Resolved += resolved;
            Conflicted += conflicted;
            LastHeard = DateTime.UtcNow;
            Error = null;
        }
    }

    /// <summary>Attachment contents received from this source (each sent once per hash the destination lacked), and their bytes.</summary>
    public (long Count, long Bytes) Contents
    {
        get
        {
            lock (_lock)
                return _contents;
        }
    }

    private (long Count, long Bytes) _contents;

    internal void ReceivedContent(long bytes)
    {
        lock (_lock)
            _contents = (_contents.Count + 1, _contents.Bytes + bytes);
    }

    internal void Heard() => LastHeard = DateTime.UtcNow;

    internal void Failed(string error) => Error = error;

    internal void Disconnected() => Connected = false;

    internal void Reconnected()
    {
        Connected = true;
        LastHeard = DateTime.UtcNow;
    }
}
