using System.Globalization;
using BenchmarkDotNet.Attributes;
using RavenLite.Storage;
using RavenLite.Storage.Journal;
using RavenLite.Storage.Platform;
using RavenLite.Storage.Trees;

namespace RavenLite.Benchmarks;

/// <summary>
/// The engine's hot inner pieces in isolation: leaf search, LZ4 over a real transaction
/// payload (100 random 100-byte puts into a 50,000-entry tree, with page diffs), record hashing,
/// and diffing one modified page (random bytes, and a real leaf before and after an insert). Run: dotnet run -c Release --project tools/RavenLite.Benchmarks -- --filter '*'
/// </summary>
[MemoryDiagnoser]
public class HotPathBenchmarks
{
    private byte[] _leaf = [];
    private byte[][] _probes = [];
    private byte[] _payload = [];
    private byte[] _compressed = [];
    private byte[] _scratch = [];
    private byte[] _page = [];
    private byte[] _base = [];
    private byte[] _leafAfterInsert = [];
    private int _compressedLength;

    [GlobalSetup]
    public void Setup()
    {
        using var fs = new MemoryFileSystem();
        using var env = StorageEnvironment.Open(StorageOptions.ForMemory(fs));
        var r = new Random(1);
        var value = new byte[100];
        using (var tx = env.WriteTransaction())
        {
            var t = tx.CreateTree("b");
            for (int i = 0; i < 50_000; i++)
            {
                r.NextBytes(value);
                t.Put(Key(i * 2), value);
            }
            tx.Commit();
        }
        env.CaptureRecordPayloads = true;
        using (var tx = env.WriteTransaction())
        {
            var t = tx.CreateTree("b");
            for (int k = 0; k < 100; k++)
            {
                r.NextBytes(value);
                t.Put(Key(r.Next(50_000) * 2 + 1), value);
            }
            tx.Commit();
        }
        _payload = env.LastRecordPayload!;
        _compressed = new byte[Lz4.CompressBound(_payload.Length)];
        _compressedLength = Lz4.Compress(_payload, _compressed);
        _scratch = new byte[_payload.Length];

        // A full leaf of 64 sequential keys, built the way the tree builds one.
        _leaf = new byte[StorageConstants.PageSize];
        _probes = Enumerable.Range(0, 64).Select(i => Key(i * 2)).ToArray();
        using (var tx = env.WriteTransaction())
        {
            var t = tx.CreateTree("leaf");
            foreach (var k in _probes)
            {
                r.NextBytes(value);
                t.Put(k, value);
            }
            tx.Commit();
        }
        _leaf = LeafBytes(env);

        // The same leaf after one insert in its middle: its slot array shifts, its new node lands below the others.
        using (var tx = env.WriteTransaction())
        {
            r.NextBytes(value);
            tx.CreateTree("leaf").Put(Key(63), value);
            tx.Commit();
        }
        _leafAfterInsert = LeafBytes(env);

        _base = new byte[StorageConstants.PageSize];
        r.NextBytes(_base);
        _page = (byte[])_base.Clone();
        Array.Copy(_page, 100, _page, 102, 64); // an insert shifting slots...
        r.NextBytes(_page.AsSpan(6000, 126)); // ...and its new node
    }

    private static byte[] Key(int i) => System.Text.Encoding.ASCII.GetBytes(i.ToString("0000000000000000", CultureInfo.InvariantCulture));

    private static byte[] LeafBytes(StorageEnvironment env)
    {
        using var tx = env.ReadTransaction();
        var t = tx.ReadTree("leaf")!;
        var header = t.State;
        return tx.CopyPage(header.RootPage);
    }

    [Benchmark(Description = "leaf search, 64 keys")]
    public int SearchLeaf()
    {
        int sum = 0;
        foreach (var k in _probes)
            sum += TreePage.SearchLeaf(_leaf, k);
        return sum;
    }

    [Benchmark(Description = "LZ4 compress tx payload")]
    public int Compress() => Lz4.Compress(_payload, _compressed);

    [Benchmark(Description = "LZ4 decompress tx payload")]
    public int Decompress() => Lz4.Decompress(_compressed.AsSpan(0, _compressedLength), _scratch);

    [Benchmark(Description = "XXH64 of the compressed record")]
    public ulong Hash() => System.IO.Hashing.XxHash64.HashToUInt64(_compressed.AsSpan(0, _compressedLength), 42);

    [Benchmark(Description = "diff one modified page")]
    public int Diff() => PageDiff.Encode(_page, _base, _scratch, StorageConstants.PageSize / 2);

    [Benchmark(Description = "diff a leaf after one insert")]
    public int DiffLeafInsert() => PageDiff.Encode(_leafAfterInsert, _leaf, _scratch, StorageConstants.PageSize / 2);
}
