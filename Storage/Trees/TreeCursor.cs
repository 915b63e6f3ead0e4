namespace RavenLite.Storage.Trees;

/// <summary>
/// Walks a tree in key order, both directions. Positioned after a successful Seek*/Move*; then
/// <see cref="Key"/> and <see cref="Value"/> are valid for the transaction's life (in a write
/// transaction, until the tree is modified, which also invalidates the cursor). Set
/// <see cref="Prefix"/> to stop at the first key outside it; <see cref="EndKey"/> for an exclusive upper bound.
/// </summary>
public sealed unsafe class TreeCursor
{
    private const int MaxDepth = 40;
    private readonly Tree _tree;
    private readonly long[] _pages = new long[MaxDepth];
    private readonly int[] _indexes = new int[MaxDepth];
    private int _leafLevel = -1;
    private bool _positioned;
    private readonly bool _snapshot; // a read transaction: its pages never change or move while it lives
    private long _cachedLeaf = -1;
    private byte* _cachedLeafPointer;

    internal TreeCursor(Tree tree)
    {
        _tree = tree;
        _snapshot = tree.Transaction is Transactions.ReadTransaction;
    }

    /// <summary>Keys must start with these bytes; outside them the cursor reports no entry.</summary>
    public byte[]? Prefix { get; set; }

    /// <summary>Exclusive upper bound for forward moves (null: none).</summary>
    public byte[]? EndKey { get; set; }

    /// <summary>True while positioned on an entry.</summary>
    public bool IsPositioned => _positioned;

    /// <summary>Current key.</summary>
    public ReadOnlySpan<byte> Key
    {
        get
        {
            ThrowIfNotPositioned();
            return TreePage.Key(Leaf, _indexes[_leafLevel]);
        }
    }

    /// <summary>Current value.</summary>
    public ReadOnlySpan<byte> Value
    {
        get
        {
            ThrowIfNotPositioned();
            return _tree.ReadValue(Leaf, _indexes[_leafLevel]);
        }
    }

    /// <summary>
    /// The current leaf. In a read transaction its address is cached per page number (a snapshot's pages are
    /// immutable and stay mapped); a write transaction may copy or reuse pages, so it looks the page up each time.
    /// </summary>
    private byte* Leaf
    {
        get
        {
            long number = _pages[_leafLevel];
            if (_snapshot && number == _cachedLeaf)
                return _cachedLeafPointer;
            byte* page = _tree.Transaction.GetPage(number);
            if (_snapshot)
            {
                _cachedLeaf = number;
                _cachedLeafPointer = page;
            }
            return page;
        }
    }

    /// <summary>Positions at the first key ≥ <paramref name="key"/>.</summary>
    public bool Seek(ReadOnlySpan<byte> key)
    {
        if (!Descend(key, fromRight: false))
            return Done();
        byte* leaf = Leaf;
        _indexes[_leafLevel] = TreePage.SearchLeaf(leaf, key, out _);
        if (_indexes[_leafLevel] >= TreePage.Count(leaf) && !NextLeaf())
            return Done();
        return Check(forward: true);
    }

    /// <summary>Positions at the first key with <see cref="Prefix"/> (or the first key at all).</summary>
    public bool SeekToFirst() => Prefix is { Length: > 0 } p ? Seek(p) : SeekEdge(last: false);

    /// <summary>Positions at the last key (with <see cref="Prefix"/> when set; below <see cref="EndKey"/> when set).</summary>
    public bool SeekToLast()
    {
        byte[]? bound = EndKey;
        if (Prefix is { Length: > 0 } p)
        {
            byte[]? successor = Successor(p);
            if (successor != null && (bound == null || successor.AsSpan().SequenceCompareTo(bound) < 0))
                bound = successor;
        }
        if (bound == null)
            return SeekEdge(last: true);
        return SeekBefore(bound);
    }

    /// <summary>Positions at the last key strictly below <paramref name="key"/>.</summary>
    public bool SeekBefore(ReadOnlySpan<byte> key)
    {
        if (!Descend(key, fromRight: false))
            return Done();
        int i = TreePage.SearchLeaf(Leaf, key, out _);
        _indexes[_leafLevel] = i - 1;
        if (i == 0 && !PreviousLeaf())
            return Done();
        _positioned = true;
        return Check(forward: false);
    }

    private bool SeekEdge(bool last)
    {
        if (_tree.Header.RootPage == 0)
            return Done();
        long pageNumber = _tree.Header.RootPage;
        for (int level = 0; ; level++)
        {
            _pages[level] = pageNumber;
            byte* page = _tree.Transaction.GetPage(pageNumber);
            int idx = last ? TreePage.Count(page) - 1 : 0;
            _indexes[level] = idx;
            if (TreePage.IsLeaf(page))
            {
                _leafLevel = level;
                break;
            }
            pageNumber = TreePage.ChildPage(page, idx);
        }
        if (TreePage.Count(Leaf) == 0)
            return Done();
        _positioned = true;
        return Check(forward: !last);
    }

    /// <summary>Moves to the next key.</summary>
    public bool MoveNext()
    {
        if (!_positioned)
            return false;
        _indexes[_leafLevel]++;
        if (_indexes[_leafLevel] >= TreePage.Count(Leaf) && !NextLeaf())
            return Done();
        return Check(forward: true);
    }

    /// <summary>Moves to the previous key.</summary>
    public bool MovePrevious()
    {
        if (!_positioned)
            return false;
        _indexes[_leafLevel]--;
        if (_indexes[_leafLevel] < 0 && !PreviousLeaf())
            return Done();
        return Check(forward: false);
    }

    private bool Descend(ReadOnlySpan<byte> key, bool fromRight)
    {
        _ = fromRight;
        if (_tree.Header.RootPage == 0)
            return false;
        long pageNumber = _tree.Header.RootPage;
        for (int level = 0; ; level++)
        {
            _pages[level] = pageNumber;
            byte* page = _tree.Transaction.GetPage(pageNumber);
            if (TreePage.IsLeaf(page))
            {
                _leafLevel = level;
                _positioned = true;
                return true;
            }
            int i = TreePage.SearchBranch(page, key);
            _indexes[level] = i;
            pageNumber = TreePage.ChildPage(page, i);
        }
    }

    private bool NextLeaf()
    {
        for (int level = _leafLevel - 1; level >= 0; level--)
        {
            byte* page = _tree.Transaction.GetPage(_pages[level]);
            if (_indexes[level] + 1 < TreePage.Count(page))
            {
                _indexes[level]++;
                for (int down = level; down < _leafLevel; down++)
                {
                    long child = TreePage.ChildPage(_tree.Transaction.GetPage(_pages[down]), _indexes[down]);
                    _pages[down + 1] = child;
                    _indexes[down + 1] = 0;
                }
                _positioned = true;
                return true;
            }
        }
        return false;
    }

    private bool PreviousLeaf()
    {
        for (int level = _leafLevel - 1; level >= 0; level--)
        {
            if (_indexes[level] > 0)
            {
                _indexes[level]--;
                for (int down = level; down < _leafLevel; down++)
                {
                    long child = TreePage.ChildPage(_tree.Transaction.GetPage(_pages[down]), _indexes[down]);
                    _pages[down + 1] = child;
                    _indexes[down + 1] = TreePage.Count(_tree.Transaction.GetPage(child)) - 1;
                }
                _positioned = true;
                return true;
            }
        }
        return false;
    }

    private bool Check(bool forward)
    {
        _positioned = true;
        var key = TreePage.Key(Leaf, _indexes[_leafLevel]);
        if (Prefix != null && !key.StartsWith(Prefix))
            return Done();
        if (forward && EndKey != null && key.SequenceCompareTo(EndKey) >= 0)
            return Done();
        return true;
    }

    private bool Done()
    {
        _positioned = false;
        return false;
    }

    private void ThrowIfNotPositioned()
    {
        if (!_positioned)
            throw new InvalidOperationException("The cursor is not positioned on an entry.");
    }

    /// <summary>The smallest key greater than every key starting with <paramref name="prefix"/>, or null when none exists (all 0xFF).</summary>
    internal static byte[]? Successor(ReadOnlySpan<byte> prefix)
    {
        for (int i = prefix.Length - 1; i >= 0; i--)
        {
            if (prefix[i] != 0xFF)
            {
                var s = prefix[..(i + 1)].ToArray();
                s[i]++;
                return s;
            }
        }
        return null;
    }
}
