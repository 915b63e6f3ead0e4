using K4os.Compression.LZ4;
using K4os.Compression.LZ4.Engine;

namespace RavenLite.Storage.Platform;

/// <summary>
/// LZ4 block compression (the journal's record codec) through K4os.Compression.LZ4, a managed implementation of the
/// reference codec: the same block format as liblz4, so journals written before the switch replay unchanged
/// (Lz4CompatibilityTests decodes blocks made by liblz4). Thread-safe: no state is shared between calls.
/// </summary>
public static unsafe class Lz4
{
    /// <summary>Largest input accepted in one block (LZ4_MAX_INPUT_SIZE of the format).</summary>
    public const int MaxInputSize = 0x7E000000;

    /// <summary>Worst-case compressed size for <paramref name="inputSize"/> bytes (LZ4_compressBound: n + n/255 + 16).</summary>
    public static int CompressBound(int inputSize) => LZ4Codec.MaximumOutputSize(inputSize);

    /// <summary>Compresses <paramref name="source"/> into <paramref name="target"/>; returns the compressed size.</summary>
    /// <exception cref="InvalidOperationException">the target is too small or the input too large.</exception>
    /// <param name="source">Input.</param>
    /// <param name="target">Output, at least <see cref="CompressBound"/> bytes.</param>
    /// <param name="acceleration">LZ4's speed/ratio trade: 1 is the default codec; larger values are faster and compress less. The output is an ordinary LZ4 block either way.</param>
    public static int Compress(ReadOnlySpan<byte> source, Span<byte> target, int acceleration = 1)
    {
        if (source.Length > MaxInputSize)
            throw new InvalidOperationException($"LZ4 compresses at most {MaxInputSize} bytes in one block, not {source.Length}.");
        int n;
        if (acceleration <= 1)
        {
            n = LZ4Codec.Encode(source, target, LZ4Level.L00_FAST);
        }
        else
        {
            // The accelerated fast codec is public in K4os only through its "pubternal" engine API. Its context is a
            // stream state (LZ4_stream_t): reused, the next block would refer to this one, so each block gets a fresh
            // one (a 16 KiB table; acceleration is only asked for large records).
            using var context = new Pubternal.FastContext();
            fixed (byte* src = source)
            fixed (byte* dst = target)
                n = Pubternal.CompressFast(context, src, dst, source.Length, target.Length, acceleration);
        }
        if (n <= 0 && source.Length > 0)
            throw new InvalidOperationException($"LZ4 compression of {source.Length} bytes into {target.Length} failed.");
        return n;
    }

    /// <summary>Decompresses a block; returns the decompressed size, or -1 when the input is malformed.</summary>
    public static int Decompress(ReadOnlySpan<byte> source, Span<byte> target)
    {
        int n = LZ4Codec.Decode(source, target);
        return n < 0 ? -1 : n;
    }
}
