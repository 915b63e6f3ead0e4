using System.Text;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Checking;

/// <summary>Enumerates every page reachable from the root tree: tree pages and overflow runs. Used to rebuild free space at open.</summary>
internal static unsafe class PageWalker
{
    public static IEnumerable<(long Page, int Count)> ReachablePages(Transaction tx)
    {
        var result = new List<(long, int)>();
        var root = tx.State.RootTree;
        if (root.RootPage != 0)
            Walk(tx, root.RootPage, result, 0);
        var c = tx.RootTree.CreateCursor();
        if (c.SeekToFirst())
        {
            do
            {
                var h = Tree.ReadHeader(c.Value);
                if (h.RootPage != 0)
                    Walk(tx, h.RootPage, result, 0);
            }
            while (c.MoveNext());
        }
        return result;
    }

    private static void Walk(Transaction tx, long pageNumber, List<(long, int)> result, int depth)
    {
        if (depth > 40)
            throw new StorageCorruptionException($"Page {pageNumber} is deeper than 40 levels: a page cycle.");
        if (pageNumber < 1 || pageNumber >= tx.State.NextPage)
            throw new StorageCorruptionException($"Page reference {pageNumber} is outside the data file's {tx.State.NextPage} pages.");
        result.Add((pageNumber, 1));
        byte* page = tx.GetPage(pageNumber);
        if (TreePage.Header(page)->PageNumber != pageNumber)
            throw new StorageCorruptionException($"Page {pageNumber} holds page {TreePage.Header(page)->PageNumber}'s header.");
        int n = TreePage.Count(page);
        bool leaf = TreePage.IsLeaf(page);
        for (int i = 0; i < n; i++)
        {
            var node = TreePage.Node(page, i);
            if (leaf)
            {
                if (node->Flags == NodeFlags.Overflow)
                    result.Add((*(long*)TreePage.Payload(node), TreePage.OverflowPages(node->DataSize)));
            }
            else
            {
                Walk(tx, TreePage.ChildPage(page, i), result, depth + 1);
            }
        }
    }

    /// <summary>
    /// The name of the tree whose pages include <paramref name="target"/> in the environment's latest state ("(root)"
    /// for the root tree), or null. For error messages: reads pages without verifying them, skips any it cannot read,
    /// and never reads the target itself.
    /// </summary>
    public static string? OwnerOf(StorageEnvironment env, long target)
    {
        try
        {
            var state = env.CurrentState;
            if (state.RootTree.RootPage == 0)
                return null;
            if (Reaches(env, state.RootTree.RootPage, target, state.NextPage, 0))
                return "(root)";
            var names = new List<(string Name, long Root)>();
            CollectTrees(env, state.RootTree.RootPage, state.NextPage, names, 0);
            foreach (var (name, root) in names)
                if (root != 0 && Reaches(env, root, target, state.NextPage, 0))
                    return name;
        }
        catch (Exception e) when (e is StorageCorruptionException or InvalidOperationException or ArgumentException)
        {
        }
        return null;
    }

    private static bool Reaches(StorageEnvironment env, long page, long target, long nextPage, int depth)
    {
        if (page == target)
            return true;
        if (depth > 40 || page < 1 || page >= nextPage)
            return false;
        byte* p = env.RawPage(page);
        int n = TreePage.Count(p);
        bool leaf = TreePage.IsLeaf(p);
        for (int i = 0; i < n && i < 1024; i++)
        {
            if (leaf)
            {
                var node = TreePage.Node(p, i);
                if (node->Flags == NodeFlags.Overflow)
                {
                    long first = *(long*)TreePage.Payload(node);
                    if (target >= first && target < first + TreePage.OverflowPages(node->DataSize))
                        return true;
                }
            }
            else if (Reaches(env, TreePage.ChildPage(p, i), target, nextPage, depth + 1))
            {
                return true;
            }
        }
        return false;
    }

    private static void CollectTrees(StorageEnvironment env, long page, long nextPage, List<(string, long)> names, int depth)
    {
        if (depth > 40 || page < 1 || page >= nextPage)
            return;
        byte* p = env.RawPage(page);
        int n = TreePage.Count(p);
        for (int i = 0; i < n && i < 1024; i++)
        {
            if (TreePage.IsLeaf(p))
            {
                var node = TreePage.Node(p, i);
                if (node->Flags == NodeFlags.Data && node->DataSize == TreeHeader.SizeOf)
                    names.Add((Encoding.UTF8.GetString(TreePage.Key(p, i)), Tree.ReadHeader(new ReadOnlySpan<byte>(TreePage.Payload(node), TreeHeader.SizeOf)).RootPage));
            }
            else
            {
                CollectTrees(env, TreePage.ChildPage(p, i), nextPage, names, depth + 1);
            }
        }
    }

    internal static string Describe(ReadOnlySpan<byte> key)
    {
        foreach (byte b in key)
            if (b < 0x20 || b > 0x7E)
                return "0x" + Convert.ToHexString(key.Length > 64 ? key[..64] : key);
        return Encoding.ASCII.GetString(key.Length > 64 ? key[..64] : key);
    }
}
