using System.Runtime.CompilerServices;
using RavenLite.Storage.Paging;

namespace RavenLite.Storage.Trees;

/// <summary>
/// Slotted-page operations on a tree page (docs/format/data-file.md, "Tree pages"): a 32-byte
/// <see cref="PageHeader"/>, then an array of 2-byte node offsets in key order growing up, and
/// nodes packed from the page end growing down. In a branch, entry 0's key is empty and means
/// "everything below entry 1's key". Pointers are valid for the owning transaction's life.
/// </summary>
internal static unsafe class TreePage
{
    private const int Size = StorageConstants.PageSize;

    public static PageHeader* Header(byte* page) => (PageHeader*)page;

    public static int Count(byte* page) => ((PageHeader*)page)->NumberOfEntries;

    public static bool IsLeaf(byte* page) => (((PageHeader*)page)->Flags & PageFlags.Leaf) != 0;

    public static ushort* Offsets(byte* page) => (ushort*)(page + PageHeader.SizeOf);

    public static NodeHeader* Node(byte* page, int index) => (NodeHeader*)(page + Offsets(page)[index]);

    public static ReadOnlySpan<byte> Key(byte* page, int index)
    {
        var n = Node(page, index);
        return new ReadOnlySpan<byte>((byte*)n + NodeHeader.SizeOf, n->KeySize);
    }

    /// <summary>Payload pointer: the value (Data), the overflow page number or the child page number.</summary>
    public static byte* Payload(NodeHeader* n) => (byte*)n + NodeHeader.SizeOf + n->KeySize;

    public static long ChildPage(byte* page, int index) => *(long*)Payload(Node(page, index));

    public static void SetChildPage(byte* page, int index, long child) => *(long*)Payload(Node(page, index)) = child;

    public static int NodeSize(NodeHeader* n) => NodeHeader.SizeOf + n->KeySize + (n->Flags == NodeFlags.Data ? n->DataSize : sizeof(long));

    public static void Init(byte* page, long pageNumber, PageFlags flags)
    {
        var h = (PageHeader*)page;
        *h = default;
        h->PageNumber = pageNumber;
        h->Flags = flags;
        h->Lower = PageHeader.SizeOf;
        h->Upper = Size;
    }

    /// <summary>Bytes in use: header, offsets and nodes.</summary>
    public static int UsedBytes(byte* page)
    {
        int n = Count(page);
        int used = PageHeader.SizeOf + n * sizeof(ushort);
        for (int i = 0; i < n; i++)
            used += NodeSize(Node(page, i));
        return used;
    }

    /// <summary>First index whose key is ≥ <paramref name="key"/> (Count when none); <paramref name="exact"/> when equal.</summary>
    public static int SearchLeaf(byte* page, ReadOnlySpan<byte> key, out bool exact)
    {
        int lo = 0, hi = Count(page) - 1;
        while (lo <= hi)
        {
            int mid = (lo + hi) >>> 1;
            int c = Key(page, mid).SequenceCompareTo(key);
            if (c == 0)
            {
                exact = true;
                return mid;
            }
            if (c < 0)
                lo = mid + 1;
            else
                hi = mid - 1;
        }
        exact = false;
        return lo;
    }

    /// <summary><see cref="SearchLeaf(byte*, ReadOnlySpan{byte}, out bool)"/> over a page held in a span (micro-benchmarks).</summary>
    public static int SearchLeaf(ReadOnlySpan<byte> page, ReadOnlySpan<byte> key)
    {
        fixed (byte* p = page)
            return SearchLeaf(p, key, out _);
    }

    /// <summary>Index of the child covering <paramref name="key"/>: the last entry whose key is ≤ it (entry 0 covers everything below entry 1).</summary>
    public static int SearchBranch(byte* page, ReadOnlySpan<byte> key)
    {
        int lo = 1, hi = Count(page) - 1, result = 0;
        while (lo <= hi)
        {
            int mid = (lo + hi) >>> 1;
            if (Key(page, mid).SequenceCompareTo(key) <= 0)
            {
                result = mid;
                lo = mid + 1;
            }
            else
            {
                hi = mid - 1;
            }
        }
        return result;
    }

    /// <summary>True when the page is a tree page whose header bounds a free gap: Lower (end of the offsets) ≤ Upper (start of the nodes) within the page.</summary>
    public static bool HasSaneGap(byte* page)
    {
        var h = Header(page);
        return (h->Flags & (PageFlags.Leaf | PageFlags.Branch)) != 0 && h->Lower >= PageHeader.SizeOf && h->Lower <= h->Upper && h->Upper <= Size;
    }

    /// <summary>Inserts a ready-made node at <paramref name="index"/>; false when it does not fit even after compaction.</summary>
    public static bool TryInsert(byte* page, int index, ReadOnlySpan<byte> node)
    {
        var h = Header(page);
        int need = node.Length + sizeof(ushort);
        if (h->Upper - h->Lower < need)
        {
            if (Size - UsedBytes(page) < need)
                return false;
            Compact(page);
        }
        h->Upper = (ushort)(h->Upper - node.Length);
        node.CopyTo(new Span<byte>(page + h->Upper, node.Length));
        var offsets = Offsets(page);
        int n = h->NumberOfEntries;
        if (index < n)
            new Span<ushort>(offsets + index, n - index).CopyTo(new Span<ushort>(offsets + index + 1, n - index));
        offsets[index] = h->Upper;
        h->NumberOfEntries++;
        h->Lower += sizeof(ushort);
        return true;
    }

    /// <summary>Removes the node at <paramref name="index"/> (its bytes are reclaimed lazily by compaction).</summary>
    public static void Remove(byte* page, int index)
    {
        var h = Header(page);
        var offsets = Offsets(page);
        int n = h->NumberOfEntries;
        var node = Node(page, index);
        if (offsets[index] == h->Upper)
            h->Upper = (ushort)(h->Upper + NodeSize(node));
        if (index < n - 1)
            new Span<ushort>(offsets + index + 1, n - index - 1).CopyTo(new Span<ushort>(offsets + index, n - index - 1));
        h->NumberOfEntries--;
        h->Lower -= sizeof(ushort);
        if (h->NumberOfEntries == 0)
            h->Upper = Size;
    }

    /// <summary>Rewrites the nodes contiguously at the page end.</summary>
    [SkipLocalsInit] // the copy is written whole before it is read
    public static void Compact(byte* page)
    {
        byte* tmp = stackalloc byte[Size];
        Unsafe.CopyBlockUnaligned(tmp, page, Size);
        var h = Header(page);
        int n = h->NumberOfEntries;
        ushort upper = Size;
        var offsets = Offsets(page);
        for (int i = 0; i < n; i++)
        {
            var src = Node(tmp, i);
            int len = NodeSize(src);
            upper = (ushort)(upper - len);
            Unsafe.CopyBlockUnaligned(page + upper, src, (uint)len);
            offsets[i] = upper;
        }
        h->Upper = upper;
    }

    /// <summary>The bytes of node <paramref name="index"/>.</summary>
    public static ReadOnlySpan<byte> NodeBytes(byte* page, int index)
    {
        var n = Node(page, index);
        return new ReadOnlySpan<byte>(n, NodeSize(n));
    }

    public static int WriteDataNode(Span<byte> dst, ReadOnlySpan<byte> key, ReadOnlySpan<byte> value)
    {
        WriteHeader(dst, key, NodeFlags.Data, value.Length);
        value.CopyTo(dst[(NodeHeader.SizeOf + key.Length)..]);
        return NodeHeader.SizeOf + key.Length + value.Length;
    }

    public static int WriteRefNode(Span<byte> dst, ReadOnlySpan<byte> key, NodeFlags flags, int dataSize, long pageNumber)
    {
        WriteHeader(dst, key, flags, dataSize);
        Unsafe.WriteUnaligned(ref dst[NodeHeader.SizeOf + key.Length], pageNumber);
        return NodeHeader.SizeOf + key.Length + sizeof(long);
    }

    private static void WriteHeader(Span<byte> dst, ReadOnlySpan<byte> key, NodeFlags flags, int dataSize)
    {
        var header = new NodeHeader { KeySize = (ushort)key.Length, Flags = flags, DataSize = dataSize };
        Unsafe.WriteUnaligned(ref dst[0], header);
        key.CopyTo(dst[NodeHeader.SizeOf..]);
    }

    /// <summary>Pages an overflow run needs for a value of <paramref name="size"/> bytes.</summary>
    public static int OverflowPages(long size) => (int)((PageHeader.SizeOf + size + Size - 1) / Size);
}
