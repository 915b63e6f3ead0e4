using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Transactions;

namespace RavenLite.Storage.Trees;

/// <summary>
/// A named B+Tree of byte-string keys (ordinal order, 1–<see cref="StorageConstants.MaxKeySize"/>
/// bytes) and values of any size up to <see cref="StorageConstants.MaxValueSize"/>. Invariants:
/// 1. Keys within a page are strictly increasing; every key under branch entry i is ≥ entry i's
///    key and &lt; entry i+1's key; all leaves are at depth <see cref="Depth"/>.
/// 2. Pages are copy-on-write: a write copies the root-to-leaf path into the transaction first,
///    so no page a snapshot can reach changes.
/// 3. Values larger than <see cref="StorageConstants.MaxNodeSize"/> live in contiguous overflow runs.
/// 4. Non-root pages are never empty; deletes merge a page into a sibling when it falls below a quarter full and the two fit in one.
/// 5. An insert at the right end of a full page moves only the new entry to the new page, so sequential fills leave pages full.
///    An insert right after the previous insert into the same leaf (a run of increasing keys landing in the middle
///    of the tree, such as HiLo ids "orders/1234-A", "orders/1235-A" among shorter ones) splits just after the new
///    entry, so the run continues as appends and its pages fill instead of staying half full.
/// Bound to one transaction; not thread-safe.
/// </summary>
public sealed unsafe class Tree
{
    private const int MaxDepth = 40;
    private readonly Transaction _tx;
    private readonly long[] _pages = new long[MaxDepth];
    private readonly int[] _indexes = new int[MaxDepth];
    internal TreeHeader Header;

    // Where the last put placed its entry (leaf page number in this transaction, index), to spot runs of increasing keys.
    private long _lastLeaf;
    private int _lastIndex = -1;

    internal Tree(Transaction tx, string? name, TreeHeader header)
    {
        _tx = tx;
        Name = name;
        Header = header;
    }

    /// <summary>The tree's name; null for the root tree.</summary>
    public string? Name { get; }

    /// <summary>Number of entries.</summary>
    public long Count => Header.EntryCount;

    /// <summary>Levels from root to leaves (0 when empty).</summary>
    public int Depth => Header.Depth;

    /// <summary>Header with statistics (root, counts of entries and pages).</summary>
    public TreeHeader State => Header;

    internal Transaction Transaction => _tx;

    internal bool IsModified { get; set; }

    private WriteTransaction Writer => _tx as WriteTransaction
        ?? throw new InvalidOperationException("This tree was opened in a read transaction; writes need a write transaction.");

    /// <summary>Looks up a key. The value span is valid for the transaction's life (in a write transaction, until its next modification).</summary>
    public bool TryGet(ReadOnlySpan<byte> key, out ReadOnlySpan<byte> value)
    {
        value = default;
        if (Header.RootPage == 0)
            return false;
        byte* page = _tx.GetPage(Header.RootPage);
        while (!TreePage.IsLeaf(page))
            page = _tx.GetPage(TreePage.ChildPage(page, TreePage.SearchBranch(page, key)));
        int i = TreePage.SearchLeaf(page, key, out bool exact);
        if (!exact)
            return false;
        value = ReadValue(page, i);
        return true;
    }

    /// <summary>True when the key exists.</summary>
    public bool ContainsKey(ReadOnlySpan<byte> key) => TryGet(key, out _);

    internal ReadOnlySpan<byte> ReadValue(byte* leaf, int index)
    {
        var n = TreePage.Node(leaf, index);
        byte* payload = TreePage.Payload(n);
        if (n->Flags == NodeFlags.Data)
            return new ReadOnlySpan<byte>(payload, n->DataSize);
        byte* overflow = _tx.GetPage(*(long*)payload);
        return new ReadOnlySpan<byte>(overflow + PageHeader.SizeOf, n->DataSize);
    }

    /// <summary>A cursor over this tree.</summary>
    public TreeCursor CreateCursor() => new(this);

    /// <summary>Inserts or replaces the value stored under <paramref name="key"/>.</summary>
    /// <exception cref="StorageLimitException">the key or value is out of bounds.</exception>
    [SkipLocalsInit] // the node staging buffer below (≈2 KB) is written before it is read: no need to zero it on every put
    public void Put(ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        ValidateKey(key);
        if (value.Length > StorageConstants.MaxValueSize)
            throw new StorageLimitException($"A value of {value.Length} bytes exceeds the maximum value size of {StorageConstants.MaxValueSize} bytes.");
        var tx = Writer;
        IsModified = true;
        if (Header.RootPage == 0)
        {
            byte* root = tx.AllocatePages(1, out long rootNumber);
            TreePage.Init(root, rootNumber, PageFlags.Leaf);
            Header.RootPage = rootNumber;
            Header.Depth = 1;
            Header.LeafPages = 1;
        }
        int leafLevel = FindPath(key);
        byte* leaf = TouchPath(tx, leafLevel);
        int i = TreePage.SearchLeaf(leaf, key, out bool exact);
        if (exact)
        {
            RemoveValueAt(tx, leaf, i);
            Header.EntryCount--;
        }
        int nodeSize = NodeHeader.SizeOf + key.Length + value.Length;
        Span<byte> scratch = stackalloc byte[StorageConstants.MaxNodeSize]; // node staging (a node is never larger)
        int written;
        if (nodeSize <= StorageConstants.MaxNodeSize)
        {
            written = TreePage.WriteDataNode(scratch, key, value);
        }
        else
        {
            int pages = TreePage.OverflowPages(value.Length);
            byte* run = tx.AllocatePages(pages, out long runNumber);
            var h = (PageHeader*)run;
            h->PageNumber = runNumber;
            h->Flags = PageFlags.Overflow;
            h->OverflowSize = value.Length;
            value.CopyTo(new Span<byte>(run + PageHeader.SizeOf, value.Length));
            Header.OverflowPages += pages;
            written = TreePage.WriteRefNode(scratch, key, NodeFlags.Overflow, value.Length, runNumber);
        }
        bool followsLast = _pages[leafLevel] == _lastLeaf && i == _lastIndex + 1;
        (_lastLeaf, _lastIndex) = InsertNode(tx, leafLevel, i, scratch[..written], followsLast);
        Header.EntryCount++;
    }

    /// <summary>Removes a key. Returns false when it was not there.</summary>
    public bool Delete(ReadOnlySpan<byte> key)
    {
        ValidateKey(key);
        var tx = Writer;
        if (Header.RootPage == 0)
            return false;
        int leafLevel = FindPath(key);
        int i = TreePage.SearchLeaf(_tx.GetPage(_pages[leafLevel]), key, out bool exact);
        if (!exact)
            return false;
        IsModified = true;
        _lastIndex = -1;
        byte* leaf = TouchPath(tx, leafLevel);
        RemoveValueAt(tx, leaf, i);
        Header.EntryCount--;
        Rebalance(tx, leafLevel);
        return true;
    }

    private static void ValidateKey(ReadOnlySpan<byte> key)
    {
        if (key.Length == 0)
            throw new StorageLimitException("A key must be at least one byte long.");
        if (key.Length > StorageConstants.MaxKeySize)
            throw new StorageLimitException($"A key of {key.Length} bytes exceeds the maximum key size of {StorageConstants.MaxKeySize} bytes.");
    }

    private void RemoveValueAt(WriteTransaction tx, byte* leaf, int i)
    {
        var n = TreePage.Node(leaf, i);
        if (n->Flags == NodeFlags.Overflow)
        {
            int pages = TreePage.OverflowPages(n->DataSize);
            tx.FreePages(*(long*)TreePage.Payload(n), pages);
            Header.OverflowPages -= pages;
        }
        TreePage.Remove(leaf, i);
    }

    /// <summary>Fills the path to the leaf for <paramref name="key"/>; returns the leaf's level.</summary>
    private int FindPath(ReadOnlySpan<byte> key)
    {
        long pageNumber = Header.RootPage;
        for (int level = 0; ; level++)
        {
            if (level >= MaxDepth)
                throw new StorageCorruptionException($"Tree '{Name}' is deeper than {MaxDepth} levels: a page cycle.");
            _pages[level] = pageNumber;
            byte* page = _tx.GetPage(pageNumber);
            if (TreePage.IsLeaf(page))
                return level;
            int i = TreePage.SearchBranch(page, key);
            _indexes[level] = i;
            pageNumber = TreePage.ChildPage(page, i);
        }
    }

    /// <summary>Copies the path root→leaf into the transaction (copy-on-write), relinking parents; returns the leaf.</summary>
    private byte* TouchPath(WriteTransaction tx, int leafLevel)
    {
        byte* page = null;
        for (int level = 0; level <= leafLevel; level++)
        {
            page = tx.ModifyPage(_pages[level], out long newNumber);
            if (newNumber != _pages[level])
            {
                _pages[level] = newNumber;
                if (level == 0)
                    Header.RootPage = newNumber;
                else
                    TreePage.SetChildPage(tx.GetPage(_pages[level - 1]), _indexes[level - 1], newNumber);
            }
        }
        return page;
    }

    /// <summary>Inserts <paramref name="node"/> at <paramref name="index"/> of the page at <paramref name="level"/>, splitting upwards as needed; returns the page and index where the node landed.</summary>
    private (long Page, int Index) InsertNode(WriteTransaction tx, int level, int index, ReadOnlySpan<byte> node, bool followsLast = false)
    {
        byte* page = tx.GetPage(_pages[level]);
        if (TreePage.TryInsert(page, index, node))
            return (_pages[level], index);

        bool leaf = TreePage.IsLeaf(page);
        byte* right = tx.AllocatePages(1, out long rightNumber);
        TreePage.Init(right, rightNumber, leaf ? PageFlags.Leaf : PageFlags.Branch);
        if (leaf)
            Header.LeafPages++;
        else
            Header.BranchPages++;
        byte[] separator = Split(page, right, index, node, leaf, followsLast, out int splitAt);
        var landed = index < splitAt ? (_pages[level], index) : (rightNumber, index - splitAt);

        Span<byte> branchNode = stackalloc byte[NodeHeader.SizeOf + StorageConstants.MaxKeySize + sizeof(long)];
        if (level == 0)
        {
            byte* root = tx.AllocatePages(1, out long rootNumber);
            TreePage.Init(root, rootNumber, PageFlags.Branch);
            int n = TreePage.WriteRefNode(branchNode, default, NodeFlags.Branch, sizeof(long), _pages[0]);
            TreePage.TryInsert(root, 0, branchNode[..n]);
            n = TreePage.WriteRefNode(branchNode, separator, NodeFlags.Branch, sizeof(long), rightNumber);
            TreePage.TryInsert(root, 1, branchNode[..n]);
            Header.RootPage = rootNumber;
            Header.Depth++;
            Header.BranchPages++;
            return landed;
        }
        int len = TreePage.WriteRefNode(branchNode, separator, NodeFlags.Branch, sizeof(long), rightNumber);
        InsertNode(tx, level - 1, _indexes[level - 1] + 1, branchNode[..len]);
        return landed;
    }

    /// <summary>
    /// Splits a full page plus one new node between <paramref name="page"/> and the empty <paramref name="right"/>;
    /// returns the separator (first key of the right page) and, in <paramref name="splitAt"/>, how many entries (counting the new one) stayed left.
    /// <paramref name="followsLast"/>: the node goes right after the previous insert, so the left page keeps everything up to it.
    /// </summary>
    [SkipLocalsInit] // the page copy is written whole before it is read
    private byte[] Split(byte* page, byte* right, int insertAt, ReadOnlySpan<byte> node, bool leaf, bool followsLast, out int splitAt)
    {
        byte* copy = stackalloc byte[StorageConstants.PageSize];
        Buffer.MemoryCopy(page, copy, StorageConstants.PageSize, StorageConstants.PageSize);
        int n = TreePage.Count(copy);
        int total = n + 1;

        if (insertAt == n)
        {
            splitAt = n; // appending: keep the left page full, start the right page with the new entry
        }
        else if (followsLast && FitsInOnePage(copy, insertAt, node, insertAt + 1))
        {
            splitAt = insertAt + 1; // a run inside the page: the entries after it move right, the run goes on appending on the left
        }
        else
        {
            int sum = 0;
            for (int j = 0; j < total; j++)
                sum += NodeAt(copy, insertAt, node, j).Length + sizeof(ushort);
            int acc = 0;
            splitAt = total - 1;
            for (int j = 0; j < total; j++)
            {
                acc += NodeAt(copy, insertAt, node, j).Length + sizeof(ushort);
                if (acc >= sum / 2)
                {
                    splitAt = j + 1;
                    break;
                }
            }
            splitAt = Math.Clamp(splitAt, 1, total - 1);
        }

        TreePage.Init(page, ((PageHeader*)copy)->PageNumber, ((PageHeader*)copy)->Flags);
        for (int j = 0; j < splitAt; j++)
            Append(page, NodeAt(copy, insertAt, node, j));
        var first = NodeAt(copy, insertAt, node, splitAt);
        int keySize = System.Runtime.CompilerServices.Unsafe.ReadUnaligned<ushort>(ref MemoryMarshal.GetReference(first));
        byte[] separator = first.Slice(NodeHeader.SizeOf, keySize).ToArray();
        Span<byte> implicitFirst = stackalloc byte[NodeHeader.SizeOf + sizeof(long)];
        for (int j = splitAt; j < total; j++)
        {
            var bytes = NodeAt(copy, insertAt, node, j);
            if (!leaf && j == splitAt)
            {
                long child = System.Runtime.CompilerServices.Unsafe.ReadUnaligned<long>(ref MemoryMarshal.GetReference(bytes[(NodeHeader.SizeOf + keySize)..]));
                TreePage.WriteRefNode(implicitFirst, default, NodeFlags.Branch, sizeof(long), child);
                Append(right, implicitFirst);
            }
            else
            {
                Append(right, bytes);
            }
        }
        return separator;
    }

    /// <summary>True when the first <paramref name="count"/> entries (the new node included) fit in one page.</summary>
    private static bool FitsInOnePage(byte* copy, int insertAt, ReadOnlySpan<byte> node, int count)
    {
        int used = PageHeader.SizeOf;
        for (int j = 0; j < count; j++)
            used += NodeAt(copy, insertAt, node, j).Length + sizeof(ushort);
        return used <= StorageConstants.PageSize;
    }

    private static ReadOnlySpan<byte> NodeAt(byte* copy, int insertAt, ReadOnlySpan<byte> node, int j) =>
        j < insertAt ? TreePage.NodeBytes(copy, j) : j == insertAt ? node : TreePage.NodeBytes(copy, j - 1);

    private static void Append(byte* page, ReadOnlySpan<byte> node)
    {
        if (!TreePage.TryInsert(page, TreePage.Count(page), node))
            throw new InvalidOperationException("Split produced a page that does not fit its nodes.");
    }

    /// <summary>After a removal at <paramref name="level"/>: drop empty pages, merge underfull ones into a sibling, shrink the root.</summary>
    private void Rebalance(WriteTransaction tx, int level)
    {
        byte* page = tx.GetPage(_pages[level]);
        bool leaf = TreePage.IsLeaf(page);
        int count = TreePage.Count(page);
        if (level == 0)
        {
            while (!TreePage.IsLeaf(page) && TreePage.Count(page) == 1)
            {
                long child = TreePage.ChildPage(page, 0);
                tx.FreePages(Header.RootPage, 1);
                Header.BranchPages--;
                Header.RootPage = child;
                Header.Depth--;
                page = tx.GetPage(child);
            }
            if (TreePage.Count(page) == 0)
            {
                bool rootIsLeaf = TreePage.IsLeaf(page); // read before FreePages returns the buffer
                tx.FreePages(Header.RootPage, 1);
                if (rootIsLeaf)
                    Header.LeafPages--;
                else
                    Header.BranchPages--;
                Header.RootPage = 0;
                Header.Depth = 0;
            }
            return;
        }
        if (count > 0 && TreePage.UsedBytes(page) >= StorageConstants.PageSize / 4 && (leaf || count >= 2))
            return;

        byte* parent = tx.GetPage(_pages[level - 1]);
        int ci = _indexes[level - 1];
        if (count == 0)
        {
            FreeTreePage(tx, _pages[level], leaf);
            RemoveBranchEntry(parent, ci);
            Rebalance(tx, level - 1);
            return;
        }
        int parentCount = TreePage.Count(parent);
        if (parentCount < 2)
            return;
        int siblingIndex = ci > 0 ? ci - 1 : ci + 1;
        byte* sibling = tx.ModifyPage(TreePage.ChildPage(parent, siblingIndex), out long siblingNumber);
        TreePage.SetChildPage(parent, siblingIndex, siblingNumber);
        int leftIndex = Math.Min(ci, siblingIndex);
        byte* left = leftIndex == ci ? page : sibling;
        byte* right = leftIndex == ci ? sibling : page;
        long rightNumber = leftIndex == ci ? siblingNumber : _pages[level];

        ReadOnlySpan<byte> separator = TreePage.Key(parent, leftIndex + 1);
        int rightCount = TreePage.Count(right);
        int needed = TreePage.UsedBytes(left);
        for (int j = 0; j < rightCount; j++)
            needed += TreePage.NodeBytes(right, j).Length + sizeof(ushort);
        if (!leaf)
            needed += separator.Length;
        if (needed > StorageConstants.PageSize)
            return;

        Span<byte> first = stackalloc byte[NodeHeader.SizeOf + StorageConstants.MaxKeySize + sizeof(long)];
        for (int j = 0; j < rightCount; j++)
        {
            if (!leaf && j == 0)
            {
                int len = TreePage.WriteRefNode(first, separator, NodeFlags.Branch, sizeof(long), TreePage.ChildPage(right, 0));
                Append(left, first[..len]);
            }
            else
            {
                Append(left, TreePage.NodeBytes(right, j));
            }
        }
        FreeTreePage(tx, rightNumber, leaf);
        RemoveBranchEntry(parent, leftIndex + 1);
        Rebalance(tx, level - 1);
    }

    private void FreeTreePage(WriteTransaction tx, long pageNumber, bool leaf)
    {
        tx.FreePages(pageNumber, 1);
        if (leaf)
            Header.LeafPages--;
        else
            Header.BranchPages--;
    }

    /// <summary>Removes a branch entry, keeping entry 0's key empty.</summary>
    private static void RemoveBranchEntry(byte* branch, int index)
    {
        TreePage.Remove(branch, index);
        if (index == 0 && TreePage.Count(branch) > 0 && TreePage.Node(branch, 0)->KeySize > 0)
        {
            long child = TreePage.ChildPage(branch, 0);
            TreePage.Remove(branch, 0);
            Span<byte> node = stackalloc byte[NodeHeader.SizeOf + sizeof(long)];
            TreePage.WriteRefNode(node, default, NodeFlags.Branch, sizeof(long), child);
            TreePage.TryInsert(branch, 0, node);
        }
    }

    /// <summary>Frees every page of the tree (DeleteTree).</summary>
    internal void FreeAllPages()
    {
        var tx = Writer;
        if (Header.RootPage != 0)
            FreeSubtree(tx, Header.RootPage);
        Header = default;
        IsModified = false;
    }

    private void FreeSubtree(WriteTransaction tx, long pageNumber)
    {
        byte* page = tx.GetPage(pageNumber);
        int count = TreePage.Count(page);
        if (TreePage.IsLeaf(page))
        {
            for (int i = 0; i < count; i++)
            {
                var n = TreePage.Node(page, i);
                if (n->Flags == NodeFlags.Overflow)
                    tx.FreePages(*(long*)TreePage.Payload(n), TreePage.OverflowPages(n->DataSize));
            }
        }
        else
        {
            var children = new long[count];
            for (int i = 0; i < count; i++)
                children[i] = TreePage.ChildPage(page, i);
            foreach (long c in children)
                FreeSubtree(tx, c);
        }
        tx.FreePages(pageNumber, 1);
    }

    /// <summary>Counts pages by walking the tree (tests compare it with the header).</summary>
    internal (long Branch, long Leaf, long Overflow) CountPages()
    {
        long b = 0, l = 0, o = 0;
        void Walk(long pageNumber)
        {
            byte* page = _tx.GetPage(pageNumber);
            int n = TreePage.Count(page);
            if (TreePage.IsLeaf(page))
            {
                l++;
                for (int i = 0; i < n; i++)
                {
                    var node = TreePage.Node(page, i);
                    if (node->Flags == NodeFlags.Overflow)
                        o += TreePage.OverflowPages(node->DataSize);
                }
                return;
            }
            b++;
            for (int i = 0; i < n; i++)
                Walk(TreePage.ChildPage(page, i));
        }
        if (Header.RootPage != 0)
            Walk(Header.RootPage);
        return (b, l, o);
    }

    internal static void ValidateName(string name)
    {
        if (string.IsNullOrEmpty(name) || Encoding.UTF8.GetByteCount(name) > StorageConstants.MaxKeySize)
            throw new StorageLimitException($"A tree name must be 1 to {StorageConstants.MaxKeySize} UTF-8 bytes.");
    }

    internal static int EncodeName(string name, Span<byte> destination) => Encoding.UTF8.GetBytes(name, destination);

    internal static TreeHeader ReadHeader(ReadOnlySpan<byte> value)
    {
        if (value.Length != TreeHeader.SizeOf)
            throw new StorageCorruptionException($"A root-tree entry holds {value.Length} bytes where a {TreeHeader.SizeOf}-byte tree header belongs.");
        return MemoryMarshal.Read<TreeHeader>(value);
    }
}
