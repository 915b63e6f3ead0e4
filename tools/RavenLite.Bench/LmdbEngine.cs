using System.Runtime.InteropServices;
using RavenLite.Storage;

namespace RavenLite.Bench;

/// <summary>
/// LMDB (Debian's liblmdb0, 0.9.x) through P/Invoke in the same process. Durability mapping per
/// docs/benchmarks.md: sync = default flags, buffered = MDB_NOSYNC, none = MDB_NOSYNC | MDB_WRITEMAP.
/// Plain mdb_put (no MDB_APPEND), so both engines do the same work for sequential keys.
/// </summary>
internal sealed class LmdbEngine : IBenchEngine
{
    private const string Lib = "liblmdb.so.0";
    private const uint MdbNoSync = 0x10000, MdbWriteMap = 0x80000, MdbRdOnly = 0x20000, MdbCreate = 0x40000;
    private const int MdbFirst = 0, MdbNext = 8, MdbNotFound = -30798;
    private readonly IntPtr _env;
    private readonly uint _dbi;
    private readonly string _dir;

    [StructLayout(LayoutKind.Sequential)]
    private struct MdbVal
    {
        public nuint Size;
        public IntPtr Data;
    }

    public static bool IsAvailable(out string message)
    {
        try
        {
            _ = mdb_version(out _, out _, out _);
            message = "";
            return true;
        }
        catch (DllNotFoundException e)
        {
            message = $"LMDB peer missing ({e.Message}). Install it with: sudo apt-get install -y liblmdb0";
            return false;
        }
    }

    public LmdbEngine(string directory, DurabilityMode durability)
    {
        _dir = directory;
        Check(mdb_env_create(out _env), "mdb_env_create");
        long mapSize = 16L << 30;
        Check(mdb_env_set_mapsize(_env, (nuint)mapSize), "mdb_env_set_mapsize");
        Check(mdb_env_set_maxreaders(_env, 64), "mdb_env_set_maxreaders");
        uint flags = durability switch
        {
            DurabilityMode.Sync => 0,
            DurabilityMode.Buffered => MdbNoSync,
            _ => MdbNoSync | MdbWriteMap,
        };
        Check(mdb_env_open(_env, directory, flags, 420), "mdb_env_open");
        Check(mdb_txn_begin(_env, IntPtr.Zero, 0, out var txn), "mdb_txn_begin");
        Check(mdb_dbi_open(txn, null, MdbCreate, out _dbi), "mdb_dbi_open");
        Check(mdb_txn_commit(txn), "mdb_txn_commit");
    }

    public string Name => "lmdb";

    public long? JournalBytes => null;

    public long? RawPageBytes => null;

    public long DataFileBytes => new FileInfo(Path.Combine(_dir, "data.mdb")).Length;

    public void Fill(BenchData data, int[] order, int count, int perTransaction)
    {
        for (int done = 0; done < count; done += perTransaction)
        {
            Check(mdb_txn_begin(_env, IntPtr.Zero, 0, out var txn), "mdb_txn_begin");
            int end = Math.Min(count, done + perTransaction);
            for (int i = done; i < end; i++)
            {
                int k = order[i];
                var key = new MdbVal { Size = BenchData.KeySize, Data = data.KeysAddress + k * BenchData.KeySize };
                var value = new MdbVal { Size = BenchData.ValueSize, Data = data.ValuesAddress + k * BenchData.ValueSize };
                Check(mdb_put(txn, _dbi, ref key, ref value, 0), "mdb_put");
            }
            Check(mdb_txn_commit(txn), "mdb_txn_commit");
        }
    }

    public void Delete(BenchData data, int[] order, int start, int count, int perTransaction)
    {
        for (int done = 0; done < count; done += perTransaction)
        {
            Check(mdb_txn_begin(_env, IntPtr.Zero, 0, out var txn), "mdb_txn_begin");
            int end = Math.Min(count, done + perTransaction);
            for (int i = done; i < end; i++)
            {
                var key = new MdbVal { Size = BenchData.KeySize, Data = data.KeysAddress + order[start + i] * BenchData.KeySize };
                Check(mdb_del(txn, _dbi, ref key, IntPtr.Zero), "mdb_del");
            }
            Check(mdb_txn_commit(txn), "mdb_txn_commit");
        }
    }

    public long ReadSequential()
    {
        Check(mdb_txn_begin(_env, IntPtr.Zero, MdbRdOnly, out var txn), "mdb_txn_begin");
        Check(mdb_cursor_open(txn, _dbi, out var cursor), "mdb_cursor_open");
        long n = 0, sum = 0;
        var key = default(MdbVal);
        var value = default(MdbVal);
        int rc = mdb_cursor_get(cursor, ref key, ref value, MdbFirst);
        while (rc == 0)
        {
            sum += Marshal.ReadByte(value.Data);
            n++;
            rc = mdb_cursor_get(cursor, ref key, ref value, MdbNext);
        }
        if (rc != MdbNotFound)
            Check(rc, "mdb_cursor_get");
        mdb_cursor_close(cursor);
        mdb_txn_abort(txn);
        GC.KeepAlive(sum);
        return n;
    }

    public void ReadRandom(BenchData data, int[] order, int start, int count)
    {
        Check(mdb_txn_begin(_env, IntPtr.Zero, MdbRdOnly, out var txn), "mdb_txn_begin");
        for (int i = 0; i < count; i++)
        {
            int k = order[(start + i) % order.Length];
            var key = new MdbVal { Size = BenchData.KeySize, Data = data.KeysAddress + k * BenchData.KeySize };
            if (mdb_get(txn, _dbi, ref key, out _) != 0)
                throw new InvalidOperationException("missing key");
        }
        mdb_txn_abort(txn);
    }

    public void Dispose() => mdb_env_close(_env);

    private static void Check(int rc, string what)
    {
        if (rc != 0)
            throw new InvalidOperationException($"{what} failed: {Marshal.PtrToStringUTF8(mdb_strerror(rc))} ({rc})");
    }

#pragma warning disable SYSLIB1054 // DllImport keeps this project free of unsafe code (CONVENTIONS §3)
    [DllImport(Lib)] private static extern IntPtr mdb_version(out int major, out int minor, out int patch);
    [DllImport(Lib)] private static extern IntPtr mdb_strerror(int err);
    [DllImport(Lib)] private static extern int mdb_env_create(out IntPtr env);
    [DllImport(Lib)] private static extern int mdb_env_set_mapsize(IntPtr env, nuint size);
    [DllImport(Lib)] private static extern int mdb_env_set_maxreaders(IntPtr env, uint readers);
    [DllImport(Lib, BestFitMapping = false, ThrowOnUnmappableChar = true)] private static extern int mdb_env_open(IntPtr env, [MarshalAs(UnmanagedType.LPUTF8Str)] string path, uint flags, uint mode);
    [DllImport(Lib)] private static extern void mdb_env_close(IntPtr env);
    [DllImport(Lib)] private static extern int mdb_del(IntPtr txn, uint dbi, ref MdbVal key, IntPtr data);
    [DllImport(Lib)] private static extern int mdb_txn_begin(IntPtr env, IntPtr parent, uint flags, out IntPtr txn);
    [DllImport(Lib)] private static extern int mdb_txn_commit(IntPtr txn);
    [DllImport(Lib)] private static extern void mdb_txn_abort(IntPtr txn);
    [DllImport(Lib, BestFitMapping = false, ThrowOnUnmappableChar = true)] private static extern int mdb_dbi_open(IntPtr txn, [MarshalAs(UnmanagedType.LPUTF8Str)] string? name, uint flags, out uint dbi);
    [DllImport(Lib)] private static extern int mdb_put(IntPtr txn, uint dbi, ref MdbVal key, ref MdbVal data, uint flags);
    [DllImport(Lib)] private static extern int mdb_get(IntPtr txn, uint dbi, ref MdbVal key, out MdbVal data);
    [DllImport(Lib)] private static extern int mdb_cursor_open(IntPtr txn, uint dbi, out IntPtr cursor);
    [DllImport(Lib)] private static extern int mdb_cursor_get(IntPtr cursor, ref MdbVal key, ref MdbVal data, int op);
    [DllImport(Lib)] private static extern void mdb_cursor_close(IntPtr cursor);
#pragma warning restore SYSLIB1054
}
