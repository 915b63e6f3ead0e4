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

    internal static string Describe(ReadOnlySpan<byte> key)
    {
        foreach (byte b in key)
            if (b < 0x20 || b > 0x7E)
                return "0x" + Convert.ToHexString(key.Length > 64 ? key[..64] : key);
        return Encoding.ASCII.GetString(key.Length > 64 ? key[..64] : key);
    }
}
