using System.Text;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Checking;

/// <summary>
/// Walks every tree and the free space and reports all inconsistencies: page headers, slot
/// layout, key order within pages and against parent bounds, uniform leaf depth, empty non-root
/// pages, overflow runs, per-tree counts against the tree header, pages used twice, and
/// reachable ∪ free ∪ pending = every page exactly once. Holds the write lock while it runs.
/// </summary>
public static unsafe class StorageChecker
{
    /// <summary>Checks <paramref name="env"/>; never throws for what it finds.</summary>
    public static CheckReport Check(StorageEnvironment env)
    {
        ArgumentNullException.ThrowIfNull(env);
        var report = new CheckReport();
        // Page checksums first, without trusting any page before it matched: a damaged page is reported, and the
        // structural checks (which read pages the ordinary way) do not run over it.
        var damaged = PageChecksumVerifier.Verify(env);
        if (damaged.Count > 0)
        {
            report.Findings.AddRange(damaged);
            return report;
        }
        using var tx = env.WriteTransaction();
        var owner = new Dictionary<long, string>();
        var state = tx.State;
        report.TotalPages = state.NextPage - 1;

        CheckTree(tx, "$root", state.RootTree, owner, report);
        var c = tx.RootTree.CreateCursor();
        if (c.SeekToFirst())
        {
            do
            {
                string name;
                try
                {
                    name = new UTF8Encoding(false, true).GetString(c.Key);
                }
                catch (DecoderFallbackException)
                {
                    report.Findings.Add($"Root tree key {PageWalker.Describe(c.Key)} is not valid UTF-8.");
                    continue;
                }
                if (c.Value.Length != TreeHeader.SizeOf)
                {
                    report.Findings.Add($"Tree '{name}': header is {c.Value.Length} bytes, expected {TreeHeader.SizeOf}.");
                    continue;
                }
                CheckTree(tx, name, Tree.ReadHeader(c.Value), owner, report);
            }
            while (c.MoveNext());
        }
        report.ReachablePages = owner.Count;

        var free = env.FreeSpace;
        var seenFree = new HashSet<long>();
        foreach (var (p, kind) in free.Free.Select(p => (p, "free")).Concat(free.Pending.Select(p => (p, "pending"))))
        {
            if (p < 1 || p >= state.NextPage)
                report.Findings.Add($"{kind} page {p} is outside [1, {state.NextPage}).");
            if (owner.TryGetValue(p, out var o))
                report.Findings.Add($"Page {p} is {kind} but reachable from {o}.");
            if (!seenFree.Add(p))
                report.Findings.Add($"Page {p} is listed twice in free space.");
            if (kind == "free")
                report.FreePages++;
            else
                report.PendingPages++;
        }
        for (long p = 1; p < state.NextPage; p++)
            if (!owner.ContainsKey(p) && !seenFree.Contains(p))
                report.Findings.Add($"Page {p} is neither reachable nor free (leaked).");
        return report;
    }

    private static void CheckTree(Transaction tx, string name, TreeHeader h, Dictionary<long, string> owner, CheckReport report)
    {
        report.Trees++;
        report.Entries += h.EntryCount;
        if (h.RootPage == 0)
        {
            if (h.Depth != 0 || h.EntryCount != 0 || h.BranchPages != 0 || h.LeafPages != 0 || h.OverflowPages != 0)
                report.Findings.Add($"Tree '{name}': empty but its header claims depth {h.Depth}, {h.EntryCount} entries, {h.BranchPages}/{h.LeafPages}/{h.OverflowPages} branch/leaf/overflow pages.");
            return;
        }
        var counts = new Counts();
        Visit(tx, name, h.RootPage, 0, h.Depth, null, null, isRoot: true, owner, report, counts);
        if (counts.Entries != h.EntryCount)
            report.Findings.Add($"Tree '{name}': header says {h.EntryCount} entries, found {counts.Entries}.");
        if (counts.Branch != h.BranchPages || counts.Leaf != h.LeafPages || counts.Overflow != h.OverflowPages)
            report.Findings.Add($"Tree '{name}': header says {h.BranchPages}/{h.LeafPages}/{h.OverflowPages} branch/leaf/overflow pages, found {counts.Branch}/{counts.Leaf}/{counts.Overflow}.");
    }

    private sealed class Counts
    {
        public long Entries, Branch, Leaf, Overflow;
    }

    private static bool Claim(long page, int count, string who, long nextPage, Dictionary<long, string> owner, CheckReport report)
    {
        if (page < 1 || page + count > nextPage)
        {
            report.Findings.Add($"{who}: page reference {page} (+{count}) is outside [1, {nextPage}).");
            return false;
        }
        bool ok = true;
        for (long p = page; p < page + count; p++)
        {
            if (owner.TryGetValue(p, out var other))
            {
                report.Findings.Add($"Page {p} is used twice: by {other} and by {who}.");
                ok = false;
            }
            else
            {
                owner[p] = who;
            }
        }
        return ok;
    }

    // Kept whole: the checks of one page (bounds, key order, links, fill, overflow runs) against the bounds its
    // parent gave it, then the recursion into its children.
    private static void Visit(Transaction tx, string tree, long pageNumber, int level, int depth, byte[]? lower, byte[]? upper, bool isRoot,
        Dictionary<long, string> owner, CheckReport report, Counts counts)
    {
        string who = $"tree '{tree}' page {pageNumber}";
        if (level >= depth)
        {
            report.Findings.Add($"{who}: deeper than the tree's depth {depth}.");
            return;
        }
        if (!Claim(pageNumber, 1, who, tx.State.NextPage, owner, report))
            return;
        byte* page = tx.GetPage(pageNumber);
        var ph = (PageHeader*)page;
        if (ph->PageNumber != pageNumber)
            report.Findings.Add($"{who}: header names page {ph->PageNumber}.");
        bool leaf = ph->Flags == PageFlags.Leaf;
        if (!leaf && ph->Flags != PageFlags.Branch)
        {
            report.Findings.Add($"{who}: flags {ph->Flags} are not a tree page.");
            return;
        }
        if (leaf != (level == depth - 1))
            report.Findings.Add($"{who}: a {(leaf ? "leaf" : "branch")} at level {level} of a depth-{depth} tree.");
        if (leaf)
            counts.Leaf++;
        else
            counts.Branch++;
        int n = ph->NumberOfEntries;
        if (ph->Lower != PageHeader.SizeOf + n * 2 || ph->Upper < ph->Lower || ph->Upper > StorageConstants.PageSize)
        {
            report.Findings.Add($"{who}: slot layout broken (entries {n}, lower {ph->Lower}, upper {ph->Upper}).");
            return;
        }
        if (n == 0 && !isRoot)
            report.Findings.Add($"{who}: empty non-root page.");
        if (!isRoot && TreePage.UsedBytes(page) < StorageConstants.PageSize / 4)
            report.UnderfilledPages++;
        for (int i = 0; i < n; i++)
        {
            int off = TreePage.Offsets(page)[i];
            if (off < ph->Upper || off + NodeHeader.SizeOf > StorageConstants.PageSize || off + TreePage.NodeSize(TreePage.Node(page, i)) > StorageConstants.PageSize)
            {
                report.Findings.Add($"{who}: node {i} at offset {off} lies outside the node area.");
                return;
            }
        }
        for (int i = 0; i < n; i++)
        {
            var key = TreePage.Key(page, i);
            var node = TreePage.Node(page, i);
            bool implicitKey = !leaf && i == 0;
            if (implicitKey && key.Length != 0)
                report.Findings.Add($"{who}: branch entry 0 has a key; it must be empty.");
            if (!implicitKey)
            {
                if (i > (leaf ? 0 : 1) && TreePage.Key(page, i - 1).SequenceCompareTo(key) >= 0)
                    report.Findings.Add($"{who}: key {PageWalker.Describe(key)} at {i} is not above the key before it.");
                if (lower != null && key.SequenceCompareTo(lower) < 0)
                    report.Findings.Add($"{who}: key {PageWalker.Describe(key)} is below its parent's bound {PageWalker.Describe(lower)}.");
                if (upper != null && key.SequenceCompareTo(upper) >= 0)
                    report.Findings.Add($"{who}: key {PageWalker.Describe(key)} is not below its parent's bound {PageWalker.Describe(upper)}.");
            }
            if (leaf)
            {
                counts.Entries++;
                if (node->Flags == NodeFlags.Overflow)
                {
                    long run = *(long*)TreePage.Payload(node);
                    int pages = TreePage.OverflowPages(node->DataSize);
                    counts.Overflow += pages;
                    if (Claim(run, pages, $"tree '{tree}' overflow run {run}", tx.State.NextPage, owner, report))
                    {
                        var oh = (PageHeader*)tx.GetPage(run);
                        if (oh->Flags != PageFlags.Overflow || oh->PageNumber != run || oh->OverflowSize != node->DataSize)
                            report.Findings.Add($"{who}: overflow run {run} has flags {oh->Flags}, number {oh->PageNumber}, size {oh->OverflowSize} (expected {node->DataSize}).");
                    }
                }
                else if (node->Flags != NodeFlags.Data)
                {
                    report.Findings.Add($"{who}: leaf node {i} has flags {node->Flags}.");
                }
                else if (node->DataSize + NodeHeader.SizeOf + node->KeySize > StorageConstants.MaxNodeSize)
                {
                    report.Findings.Add($"{who}: inline node {i} of {node->DataSize} bytes should be in overflow.");
                }
            }
            else
            {
                if (node->Flags != NodeFlags.Branch)
                {
                    report.Findings.Add($"{who}: branch node {i} has flags {node->Flags}.");
                    continue;
                }
                byte[]? childLower = i == 0 ? lower : key.ToArray();
                byte[]? childUpper = i + 1 < n ? TreePage.Key(page, i + 1).ToArray() : upper;
                Visit(tx, tree, TreePage.ChildPage(page, i), level + 1, depth, childLower, childUpper, false, owner, report, counts);
            }
        }
    }
}
