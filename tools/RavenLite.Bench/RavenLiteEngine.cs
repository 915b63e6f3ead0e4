using RavenLite.Storage;

namespace RavenLite.Bench;

internal sealed class RavenLiteEngine : IBenchEngine
{
    private readonly StorageEnvironment _env;
    private readonly string _dir;
    private readonly Storage.Encryption.EncryptionKey? _key;

    /// <param name="directory">A fresh directory.</param>
    /// <param name="durability">The commits' durability.</param>
    /// <param name="encrypted">An encrypted environment (a random key): the "ravenlite-encrypted" engine.</param>
    public RavenLiteEngine(string directory, DurabilityMode durability, bool encrypted = false)
    {
        _dir = directory;
        _key = encrypted ? Storage.Encryption.EncryptionKey.FromBytes(System.Security.Cryptography.RandomNumberGenerator.GetBytes(32)) : null;
        _env = StorageEnvironment.Open(new StorageOptions { Directory = directory, Durability = durability, EncryptionKey = _key });
    }

    public string Name => _key == null ? "ravenlite" : "ravenlite-encrypted";

    public long? JournalBytes => _env.GetStats().JournalBytesWritten;

    public long? RawPageBytes => _env.GetStats().UncompressedBytes;

    public long DataFileBytes => new FileInfo(Path.Combine(_dir, "data")).Length;

    public void Fill(BenchData data, int[] order, int count, int perTransaction)
    {
        for (int done = 0; done < count; done += perTransaction)
        {
            using var tx = _env.WriteTransaction();
            var t = tx.CreateTree("bench");
            int end = Math.Min(count, done + perTransaction);
            for (int i = done; i < end; i++)
            {
                int k = order[i];
                t.Put(data.Key(k), data.Value(k));
            }
            tx.Commit();
        }
    }

    public void Delete(BenchData data, int[] order, int start, int count, int perTransaction)
    {
        for (int done = 0; done < count; done += perTransaction)
        {
            using var tx = _env.WriteTransaction();
            var t = tx.CreateTree("bench");
            int end = Math.Min(count, done + perTransaction);
            for (int i = done; i < end; i++)
                t.Delete(data.Key(order[start + i]));
            tx.Commit();
        }
    }

    /// <summary>The undo file's length now (before-images of the pages a flush overwrites; a clean close deletes it).</summary>
    public long UndoFileBytes => _env.GetStats().UndoFileBytes;

    public long ReadSequential()
    {
        using var tx = _env.ReadTransaction();
        var c = tx.ReadTree("bench")!.CreateCursor();
        long n = 0, sum = 0;
        if (c.SeekToFirst())
        {
            do
            {
                sum += c.Value[0];
                n++;
            }
            while (c.MoveNext());
        }
        GC.KeepAlive(sum);
        return n;
    }

    public void ReadRandom(BenchData data, int[] order, int start, int count)
    {
        using var tx = _env.ReadTransaction();
        var tree = tx.ReadTree("bench")!;
        for (int i = 0; i < count; i++)
        {
            if (!tree.TryGet(data.Key(order[(start + i) % order.Length]), out _))
                throw new InvalidOperationException("missing key");
        }
    }

    /// <summary>Copies committed pages into the data file so reads measure the mapped file, as LMDB's do.</summary>
    public void Flush() => _env.Flush();

    public void Dispose()
    {
        _env.Dispose();
        _key?.Dispose();
    }
}
