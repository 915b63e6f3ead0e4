using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Debugging;

/// <summary>The walk behind <see cref="StorageEnvironment.GetLayout"/>: every tree page of a snapshot, and the free-space state.</summary>
internal static unsafe class StorageLayoutWalker
{
    /// <summary>
    /// The data file of <paramref name="env"/> page by page at the current snapshot, its map downsampled to at most
    /// <paramref name="maxCells"/> cells: which tree owns each page, which are free, waiting for reuse or for a flush.
    /// </summary>
    public static StorageLayout Walk(StorageEnvironment env, int maxCells)
    {
        using var tx = env.ReadTransaction();
        long pages = tx.State.NextPage;
        var owner = new int[pages]; // 1 = unused until a walk or the free list says otherwise
        Array.Fill(owner, 1);
        var owners = new List<string> { "free", "unused", "journal-pending", "reuse-pending" };
        var trees = new List<TreeLayout>();
        void Tree(string name, TreeHeader h)
        {
            int index = owners.Count;
            owners.Add(name);
            var fill = new int[10];
            if (h.RootPage != 0)
                WalkLayout(tx, h.RootPage, index, owner, fill, 0);
            trees.Add(new TreeLayout(name, h.Depth, h.EntryCount, h.BranchPages, h.LeafPages, h.OverflowPages, fill));
        }
        Tree("$root", tx.State.RootTree);
        foreach (string name in tx.GetTreeNames())
            Tree(name, tx.ReadTree(name)!.State);
        long free = 0;
        var (freeList, pendingList) = env.FreeSpaceSnapshot(TimeSpan.FromSeconds(5));
        foreach (long p in freeList)
        {
            if (p < pages)
                owner[p] = 0;
            free++;
        }
        foreach (long p in pendingList)
            if (p < pages && owner[p] == 1)
                owner[p] = 3; // freed, waiting for older readers (reachable from this snapshot: still its tree's)
        long pending = 0;
        foreach (var b in env.PagesWaitingForFlush())
        {
            for (long p = b.PageNumber; p < b.PageNumber + b.PageCount && p < pages; p++)
                owner[p] = 2;
            pending += b.PageCount;
        }
        long perCell = Math.Max(1, (pages + maxCells - 1) / Math.Max(1, maxCells));
        var cells = new int[(pages + perCell - 1) / perCell];
        var counts = new Dictionary<int, int>();
        for (int c = 0; c < cells.Length; c++)
        {
            counts.Clear();
            for (long p = c * perCell; p < Math.Min(pages, (c + 1) * perCell); p++)
                counts[owner[p]] = counts.GetValueOrDefault(owner[p]) + 1;
            cells[c] = counts.MaxBy(kv => kv.Value).Key;
        }
        var journal = env.LatestJournalRecords();
        return new StorageLayout
        {
            PageSize = StorageConstants.PageSize,
            Pages = pages,
            FreePages = free,
            ReusePendingPages = pendingList.Length,
            JournalPendingPages = pending,
            Trees = trees,
            Owners = owners,
            Cells = cells,
            PagesPerCell = perCell,
            Journal = journal,
        };
    }

    private static void WalkLayout(Transaction tx, long pageNumber, int index, int[] owner, int[] fill, int depth)
    {
        if (depth > 40 || pageNumber < 1 || pageNumber >= owner.Length)
            return; // a damaged tree: the checker reports it; the layout shows what it can
        owner[pageNumber] = index;
        byte* page = tx.GetPage(pageNumber);
        fill[Math.Min(9, TreePage.UsedBytes(page) * 10 / StorageConstants.PageSize)]++;
        int n = TreePage.Count(page);
        bool leaf = TreePage.IsLeaf(page);
        for (int i = 0; i < n; i++)
        {
            if (leaf)
            {
                var node = TreePage.Node(page, i);
                if (node->Flags == NodeFlags.Overflow)
                {
                    long first = *(long*)TreePage.Payload(node);
                    for (long p = first; p < first + TreePage.OverflowPages(node->DataSize) && p < owner.Length; p++)
                        owner[p] = index;
                }
            }
            else
            {
                WalkLayout(tx, TreePage.ChildPage(page, i), index, owner, fill, depth + 1);
            }
        }
    }
}
