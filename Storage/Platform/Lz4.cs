namespace RavenLite.Storage.Platform;

/// <summary>
/// LZ4 block compression through Debian's liblz4 (the K4os package is not in this NuGet source;
/// docs/dependencies.md). Thread-safe: the library's block functions keep no shared state.
/// </summary>
public static unsafe class Lz4
{
    /// <summary>Largest input accepted in one block.</summary>
    public const int MaxInputSize = Native.Lz4MaxInputSize;

    /// <summary>Worst-case compressed size for <paramref name="inputSize"/> bytes.</summary>
    public static int CompressBound(int inputSize) => Native.LZ4_compressBound(inputSize);

    /// <summary>Compresses <paramref name="source"/> into <paramref name="target"/>; returns the compressed size.</summary>
    /// <exception cref="InvalidOperationException">the target is too small or the input too large.</exception>
    /// <param name="source">Input.</param>
    /// <param name="target">Output, at least <see cref="CompressBound"/> bytes.</param>
    /// <param name="acceleration">LZ4's speed/ratio trade: 1 is the default codec; larger values are faster and compress less. The output is an ordinary LZ4 block either way.</param>
    public static int Compress(ReadOnlySpan<byte> source, Span<byte> target, int acceleration = 1)
    {
        fixed (byte* src = source)
        fixed (byte* dst = target)
        {
            int n = acceleration <= 1
                ? Native.LZ4_compress_default(src, dst, source.Length, target.Length)
                : Native.LZ4_compress_fast(src, dst, source.Length, target.Length, acceleration);
            if (n <= 0)
                throw new InvalidOperationException($"LZ4 compression of {source.Length} bytes into {target.Length} failed.");
            return n;
        }
    }

    /// <summary>Decompresses a block; returns the decompressed size, or -1 when the input is malformed.</summary>
    public static int Decompress(ReadOnlySpan<byte> source, Span<byte> target)
    {
        fixed (byte* src = source)
        fixed (byte* dst = target)
        {
            int n = Native.LZ4_decompress_safe(src, dst, source.Length, target.Length);
            return n < 0 ? -1 : n;
        }
    }
}
