using System.Runtime.InteropServices;
using System.Text;
using BenchmarkDotNet.Attributes;
using RavenLite.Storage.Platform;

namespace RavenLite.Benchmarks;

/// <summary>
/// The journal's codec (K4os.Compression.LZ4 through <see cref="Lz4"/>) against the reference C implementation
/// (Debian's liblz4, the codec the journal used before; package liblz4-1, needed only to run this class), same run:
/// a bulk-load-sized record of JSON documents (8 MiB, where the journal asks for acceleration 8) compressed with
/// acceleration 1 and 8, and decompressed. Run: dotnet run -c Release --project tools/RavenLite.Benchmarks -- --filter '*Lz4*'
/// </summary>
[MemoryDiagnoser]
public partial class Lz4Benchmarks
{
    private byte[] _input = [];
    private byte[] _compressed = [];
    private byte[] _scratch = [];
    private int _compressedLength;

    [Params(1, 8)]
    public int Acceleration { get; set; }

    [GlobalSetup]
    public void Setup()
    {
        var r = new Random(7);
        var sb = new StringBuilder();
        for (int i = 0; sb.Length < 8 << 20; i++)
            sb.Append(System.Globalization.CultureInfo.InvariantCulture, $"{{\"Id\":\"orders/{i}\",\"Company\":\"companies/{r.Next(100)}\",\"Total\":{r.Next(100_000) / 100.0},\"Lines\":[{{\"Product\":\"products/{r.Next(77)}\",\"Quantity\":{r.Next(1, 30)}}}],\"Note\":\"{Convert.ToBase64String(BitConverter.GetBytes(r.NextInt64()))}\"}}");
        _input = Encoding.UTF8.GetBytes(sb.ToString());
        _compressed = new byte[Lz4.CompressBound(_input.Length)];
        _compressedLength = Lz4.Compress(_input, _compressed, Acceleration);
        _scratch = new byte[_input.Length];
        int n = NativeCompress();
        if (n <= 0 || Lz4.Decompress(_compressed.AsSpan(0, n), _scratch) != _input.Length)
            throw new InvalidOperationException("liblz4's block does not decode with the journal's codec");
        Console.WriteLine($"// {_input.Length} bytes -> K4os {_compressedLength}, liblz4 {n} (acceleration {Acceleration})");
        _compressedLength = Lz4.Compress(_input, _compressed, Acceleration);
    }

    [Benchmark(Description = "compress (K4os)")]
    public int Compress() => Lz4.Compress(_input, _compressed, Acceleration);

    [Benchmark(Description = "compress (liblz4, peer)")]
    public int NativeCompress() => LZ4_compress_fast(_input, _compressed, _input.Length, _compressed.Length, Acceleration);

    [Benchmark(Description = "decompress (K4os)")]
    public int Decompress() => Lz4.Decompress(_compressed.AsSpan(0, _compressedLength), _scratch);

    [Benchmark(Description = "decompress (liblz4, peer)")]
    public int NativeDecompress() => LZ4_decompress_safe(_compressed, _scratch, _compressedLength, _scratch.Length);

    [LibraryImport("liblz4.so.1")]
    private static partial int LZ4_compress_fast(byte[] src, byte[] dst, int srcSize, int dstCapacity, int acceleration);

    [LibraryImport("liblz4.so.1")]
    private static partial int LZ4_decompress_safe(byte[] src, byte[] dst, int compressedSize, int dstCapacity);
}
