using System.Buffers.Binary;
using System.IO.Hashing;

namespace RavenLite.Storage.Backup;

/// <summary>
/// The XXH64 of every page reachable at one snapshot (<see cref="StorageSnapshot"/>), by page number: what the next
/// incremental stream compares against. Serialized as docs/format/backup.md ("Page hashes") describes. Not thread-safe
/// while being filled; read-only use afterwards is.
/// </summary>
public sealed class PageHashes
{
    /// <summary>"RVLHASH1" little-endian.</summary>
    public const ulong Magic = 0x314853414C4C5652UL;

    private long[] _pages;
    private ulong[] _hashes;
    private int _count;

    /// <summary>An empty set with room for <paramref name="capacity"/> pages.</summary>
    public PageHashes(int capacity = 0)
    {
        _pages = new long[Math.Max(capacity, 4)];
        _hashes = new ulong[_pages.Length];
    }

    /// <summary>The transaction these hashes describe.</summary>
    public long TxId { get; internal set; }

    /// <summary>Pages recorded.</summary>
    public int Count => _count;

    /// <summary>Records a page; page numbers must come in ascending order.</summary>
    public void Add(long page, ulong hash)
    {
        if (_count > 0 && page <= _pages[_count - 1])
            throw new ArgumentException($"Page {page} after page {_pages[_count - 1]}: pages must ascend.", nameof(page));
        if (_count == _pages.Length)
        {
            Array.Resize(ref _pages, _count * 2);
            Array.Resize(ref _hashes, _count * 2);
        }
        _pages[_count] = page;
        _hashes[_count++] = hash;
    }

    /// <summary>The hash recorded for <paramref name="page"/>, if any (binary search).</summary>
    public bool TryGet(long page, out ulong hash)
    {
        int i = Array.BinarySearch(_pages, 0, _count, page);
        hash = i >= 0 ? _hashes[i] : 0;
        return i >= 0;
    }

    /// <summary>Writes the set: magic, tx id, count, (page, hash) pairs, XXH64 of all of that.</summary>
    public void WriteTo(Stream output)
    {
        var hasher = new XxHash64();
        var buffer = new byte[16 * 4096];
        BinaryPrimitives.WriteUInt64LittleEndian(buffer.AsSpan(0), Magic);
        BinaryPrimitives.WriteInt64LittleEndian(buffer.AsSpan(8), TxId);
        BinaryPrimitives.WriteInt64LittleEndian(buffer.AsSpan(16), _count);
        hasher.Append(buffer.AsSpan(0, 24));
        output.Write(buffer, 0, 24);
        int used = 0;
        for (int i = 0; i < _count; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(buffer.AsSpan(used), _pages[i]);
            BinaryPrimitives.WriteUInt64LittleEndian(buffer.AsSpan(used + 8), _hashes[i]);
            used += 16;
            if (used == buffer.Length)
            {
                hasher.Append(buffer);
                output.Write(buffer);
                used = 0;
            }
        }
        hasher.Append(buffer.AsSpan(0, used));
        output.Write(buffer, 0, used);
        BinaryPrimitives.WriteUInt64LittleEndian(buffer, hasher.GetCurrentHashAsUInt64());
        output.Write(buffer, 0, 8);
    }

    /// <summary>Reads a set written by <see cref="WriteTo"/>.</summary>
    /// <exception cref="InvalidDataException">the bytes are not a whole, valid set.</exception>
    public static PageHashes ReadFrom(Stream input)
    {
        var hasher = new XxHash64();
        var head = new byte[24];
        StreamReading.ReadExactly(input, head, "page hashes");
        if (BinaryPrimitives.ReadUInt64LittleEndian(head) != Magic)
            throw new InvalidDataException("The page hashes do not start with their magic number.");
        long count = BinaryPrimitives.ReadInt64LittleEndian(head.AsSpan(16));
        if (count < 0 || count > int.MaxValue / 2)
            throw new InvalidDataException($"The page hashes declare {count} pages.");
        hasher.Append(head);
        var set = new PageHashes((int)count) { TxId = BinaryPrimitives.ReadInt64LittleEndian(head.AsSpan(8)) };
        var pair = new byte[16];
        for (long i = 0; i < count; i++)
        {
            StreamReading.ReadExactly(input, pair, "page hashes");
            hasher.Append(pair);
            set.Add(BinaryPrimitives.ReadInt64LittleEndian(pair), BinaryPrimitives.ReadUInt64LittleEndian(pair.AsSpan(8)));
        }
        StreamReading.ReadExactly(input, pair.AsSpan(0, 8), "page hashes");
        if (BinaryPrimitives.ReadUInt64LittleEndian(pair) != hasher.GetCurrentHashAsUInt64())
            throw new InvalidDataException("The page hashes fail their checksum.");
        return set;
    }
}

/// <summary>Exact reads that name what was cut short.</summary>
internal static class StreamReading
{
    public static void ReadExactly(Stream input, Span<byte> buffer, string what)
    {
        int total = 0;
        while (total < buffer.Length)
        {
            int n = input.Read(buffer[total..]);
            if (n == 0)
                throw new InvalidDataException($"The {what} end after {total} of {buffer.Length} expected bytes: the file is truncated.");
            total += n;
        }
    }
}
