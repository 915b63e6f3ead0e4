namespace RavenLite.Storage.Debugging;

/// <summary>A point-in-time view of an environment's counters. Byte counts are since the environment opened.</summary>
public sealed class StorageStats
{
    /// <summary>Data file length, bytes (includes preallocated space).</summary>
    public long DataFileBytes { get; init; }

    /// <summary>Pages in use or free (logical size).</summary>
    public long PagesInUse { get; init; }

    /// <summary>Free pages, reusable by the next write (part of <see cref="PagesInUse"/>).</summary>
    public long FreePages { get; init; }

    /// <summary>Pages freed by commits that wait for older readers to end before they are reusable (part of <see cref="PagesInUse"/>).</summary>
    public long ReusePendingPages { get; init; }

    /// <summary>Pages holding data: <see cref="PagesInUse"/> minus free and reuse-pending pages.</summary>
    public long UsedPages => PagesInUse - FreePages - ReusePendingPages;

    /// <summary>Length of the undo file (before-images of the pages the largest recent flush overwrote), bytes.</summary>
    public long UndoFileBytes { get; init; }

    /// <summary>Committed pages not yet copied to the data file.</summary>
    public long PagesWaitingForFlush { get; init; }

    /// <summary>Journal bytes written by commits (headers plus compressed payloads).</summary>
    public long JournalBytesWritten { get; init; }

    /// <summary>Modified page bytes (plus 24-byte entry headers) before diffing and compression: what a journal of whole pages would write.</summary>
    public long UncompressedBytes { get; init; }

    /// <summary>Record payload bytes after diffing and compression.</summary>
    public long CompressedBytes { get; init; }

    /// <summary>Committed write transactions.</summary>
    public long Commits { get; init; }

    /// <summary>Completed flushes to the data file.</summary>
    public long Flushes { get; init; }

    /// <summary>fdatasync calls on the journal.</summary>
    public long JournalSyncs { get; init; }

    /// <summary>fdatasync calls on the data file.</summary>
    public long DataFileSyncs { get; init; }

    /// <summary>Last committed transaction.</summary>
    public long LastCommittedTxId { get; init; }

    /// <summary>Last transaction synced into the data file.</summary>
    public long LastSyncedTxId { get; init; }

    /// <summary>Page-pool slabs (2 MiB each) mapped now, shared by every environment of the process.</summary>
    public long PagePoolSlabs { get; init; }

    /// <summary>Page-pool slabs mapped since the process started (each costs fresh memory: a fault and a zero-fill per page).</summary>
    public long PagePoolSlabsMapped { get; init; }

    /// <summary>The root tree (tree of trees).</summary>
    public required TreeStats RootTree { get; init; }

    /// <summary>Every named tree.</summary>
    public required IReadOnlyList<TreeStats> Trees { get; init; }

    /// <summary>Raw modified page bytes ÷ journaled payload bytes (0 when nothing was journaled).</summary>
    public double CompressionRatio => CompressedBytes == 0 ? 0 : (double)UncompressedBytes / CompressedBytes;
}
