namespace RavenLite.Storage;

/// <summary>What a commit waits for before it returns. Per environment.</summary>
public enum DurabilityMode
{
    /// <summary>Commit returns after the journal record is on stable storage (fdatasync). Survives power loss.</summary>
    Sync = 0,
    /// <summary>Commit returns after the record is handed to the OS (no fsync). Survives a process crash, not a power loss.</summary>
    Buffered = 1,
    /// <summary>No journal write at commit; only background flushes persist data. For tests and bulk loads.</summary>
    None = 2,
}
