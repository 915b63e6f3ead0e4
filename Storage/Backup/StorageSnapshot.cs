using System.Buffers.Binary;
using System.IO.Hashing;
using System.Runtime.InteropServices;
using RavenLite.Storage.Checking;
using RavenLite.Storage.Transactions;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Backup;

/// <summary>
/// Hot backups of an environment at the storage level: the pages a <see cref="ReadTransaction"/> can reach, written
/// as a page stream (docs/format/backup.md). A full stream holds every reachable page; an incremental one only the
/// pages whose content differs from the previous stream's (judged by the XXH64 of each page, which every stream
/// records for the next). Applied in order by <see cref="SnapshotRestorer"/>, the streams give a data file and header
/// that open as the environment exactly as of the last stream's transaction.
/// Invariants: (1) a page reachable from a live read transaction is never changed (copy-on-write; free pages wait
/// for readers), so copying under the transaction is consistent while writes go on; (2) after applying streams
/// 1..k every page reachable at stream k's transaction holds its content of that moment (by induction: a page left
/// out of stream k had stream k−1's hash, so it was reachable then and already holds that content); (3) free space
/// is rebuilt at open from reachability, so pages no longer reachable may hold anything.
/// Thread-safety: one call per transaction; the transaction must not be used elsewhere meanwhile.
/// </summary>
public static unsafe class StorageSnapshot
{
    /// <summary>"RVLSNAP1" little-endian.</summary>
    public const ulong Magic = 0x3150414E534C5652UL;

    /// <summary>Format version of the page stream.</summary>
    public const int Version = 1;

    /// <summary>Size of the stream header in bytes.</summary>
    public const int HeaderSize = 96;

    /// <summary>Size of a run header (and of the trailer's first part) in bytes.</summary>
    public const int RunHeaderSize = 16;

    /// <summary>Most pages in one run.</summary>
    public const int MaxRunPages = 256;

    /// <summary>
    /// Writes the pages of <paramref name="tx"/>'s snapshot to <paramref name="output"/>: all reachable pages when
    /// <paramref name="previous"/> is null (a full stream), else only those whose hash differs from (or is missing in)
    /// <paramref name="previous"/>. Returns the hashes of every reachable page, for the next incremental stream.
    /// Cost: reads every reachable page once (hashing at memory speed); writes only the included ones.
    /// </summary>
    /// <param name="tx">The snapshot to write.</param>
    /// <param name="output">Where the page stream goes.</param>
    /// <param name="previous">The hashes of the stream this one is incremental to; null: a full stream.</param>
    /// <param name="progress">Called with (pages read, pages reachable) every 1,024 pages and at the end; null: none.</param>
    /// <param name="cancellation">Stops the stream between page runs.</param>
    public static SnapshotResult Write(ReadTransaction tx, Stream output, PageHashes? previous, Action<long, long>? progress = null, CancellationToken cancellation = default)
    {
        ArgumentNullException.ThrowIfNull(tx);
        ArgumentNullException.ThrowIfNull(output);
        // Units as the walker reports them: a tree page, or an overflow run whose pages are only addressable through its
        // first page (the page table holds a run under its first number), so every page is read as base + i pages.
        var units = PageWalker.ReachablePages(tx).ToList();
        units.Sort((a, b) => a.Page.CompareTo(b.Page));
        var pages = new List<(long Page, nint Address, bool Head)>();
        foreach (var (page, count) in units)
        {
            byte* first = tx.GetPage(page);
            for (int i = 0; i < count; i++)
                pages.Add((page + i, (nint)(first + (long)i * StorageConstants.PageSize), i == 0));
        }
        var hashes = new PageHashes(pages.Count);
        var hasher = new XxHash64();
        var header = new byte[HeaderSize];
        BinaryPrimitives.WriteUInt64LittleEndian(header.AsSpan(0), Magic);
        BinaryPrimitives.WriteInt32LittleEndian(header.AsSpan(8), Version);
        BinaryPrimitives.WriteInt32LittleEndian(header.AsSpan(12), StorageConstants.PageSize);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(16), tx.State.TxId);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(24), tx.State.NextPage);
        BinaryPrimitives.WriteInt64LittleEndian(header.AsSpan(32), previous?.TxId ?? 0);
        var root = tx.State.RootTree;
        MemoryMarshal.Write(header.AsSpan(40, TreeHeader.SizeOf), in root);
        Emit(output, hasher, header);

        var runHeader = new byte[RunHeaderSize];
        var copy = new byte[StorageConstants.PageSize];
        var run = new List<(long Page, nint Address)>(MaxRunPages);
        long runs = 0, written = 0;
        void FlushRun()
        {
            if (run.Count == 0)
                return;
            BinaryPrimitives.WriteInt64LittleEndian(runHeader.AsSpan(0), run[0].Page);
            BinaryPrimitives.WriteInt32LittleEndian(runHeader.AsSpan(8), run.Count);
            BinaryPrimitives.WriteInt32LittleEndian(runHeader.AsSpan(12), 0);
            Emit(output, hasher, runHeader);
            // Each page is read once, into a copy that is both hashed and written: the flusher may stamp a page's checksum
            // field while the page is read (readers ignore that field), and hashing and writing the live page separately
            // could then disagree — a stream whose own checksum fails at restore.
            foreach (var (_, address) in run)
            {
                new ReadOnlySpan<byte>((byte*)address, StorageConstants.PageSize).CopyTo(copy);
                Emit(output, hasher, copy);
            }
            runs++;
            written += run.Count;
            run.Clear();
        }
        for (int i = 0; i < pages.Count; i++)
        {
            if ((i & 1023) == 0)
            {
                cancellation.ThrowIfCancellationRequested();
                progress?.Invoke(i, pages.Count);
            }
            var (p, address, head) = pages[i];
            ulong hash = ContentHash((byte*)address, head);
            hashes.Add(p, hash);
            bool include = previous == null || !previous.TryGet(p, out ulong before) || before != hash;
            if (!include)
            {
                FlushRun();
                continue;
            }
            if (run.Count > 0 && (run[^1].Page != p - 1 || run.Count == MaxRunPages))
                FlushRun();
            run.Add((p, address));
        }
        FlushRun();
        progress?.Invoke(pages.Count, pages.Count);

        BinaryPrimitives.WriteInt64LittleEndian(runHeader.AsSpan(0), -1);
        BinaryPrimitives.WriteInt32LittleEndian(runHeader.AsSpan(8), checked((int)runs));
        BinaryPrimitives.WriteInt32LittleEndian(runHeader.AsSpan(12), 0);
        Emit(output, hasher, runHeader);
        Span<byte> digest = stackalloc byte[8];
        BinaryPrimitives.WriteUInt64LittleEndian(digest, hasher.GetCurrentHashAsUInt64());
        output.Write(digest);
        hashes.TxId = tx.State.TxId;
        return new SnapshotResult(tx.State.TxId, pages.Count, written, hashes);
    }

    /// <summary>
    /// XXH64 of a page; of a tree page or an overflow run's first page (<paramref name="head"/>: one with a header),
    /// without its checksum field (header bytes 24–31): the flusher stamps it when the page reaches the data file, so
    /// the same content read before and after a flush would otherwise count as changed (an incremental taken after a
    /// flush rewrote every page that the full one had read unflushed). A restore restamps every page.
    /// </summary>
    private static ulong ContentHash(byte* page, bool head)
    {
        if (!head)
            return XxHash64.HashToUInt64(new ReadOnlySpan<byte>(page, StorageConstants.PageSize));
        var hasher = new XxHash64();
        hasher.Append(new ReadOnlySpan<byte>(page, Paging.PageChecksum.FieldOffset));
        hasher.Append(new ReadOnlySpan<byte>(page + Paging.PageChecksum.FieldEnd, StorageConstants.PageSize - Paging.PageChecksum.FieldEnd));
        return hasher.GetCurrentHashAsUInt64();
    }

    private static void Emit(Stream output, XxHash64 hasher, ReadOnlySpan<byte> bytes)
    {
        hasher.Append(bytes);
        output.Write(bytes);
    }
}

/// <summary>What <see cref="StorageSnapshot.Write"/> did.</summary>
/// <param name="TxId">The transaction the stream is a snapshot of.</param>
/// <param name="ReachablePages">Pages reachable at that transaction.</param>
/// <param name="WrittenPages">Pages written to the stream (all reachable ones for a full stream).</param>
/// <param name="Hashes">Hashes of every reachable page, the base of the next incremental stream.</param>
public sealed record SnapshotResult(long TxId, long ReachablePages, long WrittenPages, PageHashes Hashes);
