namespace RavenLite.Storage.Debugging;

/// <summary>
/// What the data file holds, page by page, at one snapshot (<see cref="StorageEnvironment.GetLayout"/>): each tree's
/// shape and how full its pages are, which owner each stretch of the file belongs to, the free pages, and the latest
/// journal records. The Studio's storage view draws it.
/// </summary>
public sealed class StorageLayout
{
    /// <summary>Bytes per page.</summary>
    public int PageSize { get; init; }

    /// <summary>Pages in the file's logical size (allocated or free).</summary>
    public long Pages { get; init; }

    /// <summary>Free pages (reusable).</summary>
    public long FreePages { get; init; }

    /// <summary>Pages freed by a commit that wait for older readers to end before they are reusable.</summary>
    public long ReusePendingPages { get; init; }

    /// <summary>Committed pages still only in the journal and memory (not yet flushed to the data file).</summary>
    public long JournalPendingPages { get; init; }

    /// <summary>Every tree (the root tree first): shape and page fill.</summary>
    public required IReadOnlyList<TreeLayout> Trees { get; init; }

    /// <summary>Owner names by index, as <see cref="Cells"/> refers to them: 0 free, 1 unused (header or not yet allocated), 2 journal-pending, 3 reuse-pending (freed, waiting for older readers), then each tree in <see cref="Trees"/> order.</summary>
    public required IReadOnlyList<string> Owners { get; init; }

    /// <summary>The data file in order, in at most the asked number of cells: each cell's most common owner (index into <see cref="Owners"/>).</summary>
    public required int[] Cells { get; init; }

    /// <summary>Pages per cell.</summary>
    public long PagesPerCell { get; init; }

    /// <summary>The latest journal records, newest last.</summary>
    public required IReadOnlyList<JournalRecordInfo> Journal { get; init; }
}

/// <summary>One tree's shape and page fill.</summary>
/// <param name="Name">The tree's name (<c>$root</c> for the root tree).</param>
/// <param name="Depth">Levels from the root to the leaves.</param>
/// <param name="Entries">Entries in the tree.</param>
/// <param name="BranchPages">Branch pages.</param>
/// <param name="LeafPages">Leaf pages.</param>
/// <param name="OverflowPages">Pages of values stored out of their leaves.</param>
/// <param name="FillHistogram">Counts of branch and leaf pages by used fraction in tenths: [0] under 10%, ..., [9] 90% or more.</param>
public sealed record TreeLayout(string Name, int Depth, long Entries, long BranchPages, long LeafPages, long OverflowPages, int[] FillHistogram);

/// <summary>One journal record: a committed transaction's pages, raw modified bytes and bytes written after diffing and LZ4.</summary>
public sealed record JournalRecordInfo(long TxId, int Pages, long RawBytes, long CompressedBytes, DateTime Time);
