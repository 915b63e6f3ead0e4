using RavenLite.Storage.Paging;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Checking;

/// <summary>Page checksums of a whole environment, for the checker (docs/format/data-file.md, "Pages").</summary>
internal static unsafe class PageChecksumVerifier
{
    /// <summary>
    /// Checks the checksum of every page reachable in the latest state, from the data file or the pages not yet
    /// flushed, walking the trees without trusting a page before it matched (for the checker: a mismatch is reported,
    /// not thrown, and the environment goes on).
    /// </summary>
    public static List<string> Verify(StorageEnvironment env)
    {
        ArgumentNullException.ThrowIfNull(env);
        var problems = new List<string>();
        if (!env.HasChecksums)
            return problems;
        var state = env.LatestState;
        var trees = new List<(string Name, long Root)>();
        if (state.RootTree.RootPage != 0)
            VerifyTree(env, "$root", state.RootTree.RootPage, state.NextPage, problems, trees, 0);
        foreach (var (name, root) in trees)
            if (root != 0) // an empty tree has no page
                VerifyTree(env, name, root, state.NextPage, problems, null, 0);
        return problems;
    }

    private static void VerifyTree(StorageEnvironment env, string tree, long page, long nextPage, List<string> problems, List<(string, long)>? trees, int depth)
    {
        if (depth > 40 || page < 1 || page >= nextPage)
        {
            problems.Add($"Tree '{tree}': page reference {page} is outside the data file's {nextPage} pages (or too deep).");
            return;
        }
        byte* p = env.RawPage(page);
        if (env.OnDisk(page) && PageChecksum.Verify(p, page, (nextPage - page) * StorageConstants.PageSize) is { } problem)
        {
            problems.Add($"Tree '{tree}', page {page}: {problem}.");
            return; // not descended: what it points to cannot be trusted
        }
        int n = TreePage.Count(p);
        bool leaf = TreePage.IsLeaf(p);
        for (int i = 0; i < n; i++)
        {
            var node = TreePage.Node(p, i);
            if (!leaf)
            {
                VerifyTree(env, tree, TreePage.ChildPage(p, i), nextPage, problems, trees, depth + 1);
            }
            else if (node->Flags == NodeFlags.Overflow)
            {
                long first = *(long*)TreePage.Payload(node);
                int count = TreePage.OverflowPages(node->DataSize);
                if (first < 1 || first + count > nextPage)
                    problems.Add($"Tree '{tree}': overflow run {first} (+{count}) is outside the data file's {nextPage} pages.");
                else if (env.OnDisk(first) && PageChecksum.Verify(env.RawPage(first), first, (long)count * StorageConstants.PageSize) is { } runProblem)
                    problems.Add($"Tree '{tree}', overflow run at page {first} ({count} pages): {runProblem}.");
            }
            else if (trees != null && node->Flags == NodeFlags.Data && node->DataSize == TreeHeader.SizeOf)
            {
                trees.Add((System.Text.Encoding.UTF8.GetString(TreePage.Key(p, i)), Tree.ReadHeader(new ReadOnlySpan<byte>(TreePage.Payload(node), TreeHeader.SizeOf)).RootPage));
            }
        }
    }
}
