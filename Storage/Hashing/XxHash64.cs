using System.Buffers.Binary;
using System.Numerics;

namespace RavenLite.Storage.Hashing;

/// <summary>
/// XXH64 (Yann Collet's xxHash, 64-bit variant), written from the published algorithm
/// description because System.IO.Hashing is not in this NuGet source (docs/dependencies.md).
/// Test vectors in XxHash64Tests pin it to the reference implementation's outputs.
/// </summary>
public static class XxHash64
{
    private const ulong Prime1 = 11400714785074694791UL;
    private const ulong Prime2 = 14029467366897019727UL;
    private const ulong Prime3 = 1609587929392839161UL;
    private const ulong Prime4 = 9650029242287828579UL;
    private const ulong Prime5 = 2870177450012600261UL;

    /// <summary>Hashes <paramref name="data"/> with <paramref name="seed"/>.</summary>
    public static ulong Hash(ReadOnlySpan<byte> data, ulong seed = 0)
    {
        var state = new State(seed);
        state.Append(data);
        return state.Digest();
    }

    /// <summary>Incremental XXH64 over several spans (no allocation).</summary>
    public struct State
    {
        private ulong _v1, _v2, _v3, _v4;
        private readonly ulong _seed;
        private ulong _total;
        private InlineBuffer _buffer;
        private int _buffered;

        /// <summary>Starts a hash with the given seed.</summary>
        public State(ulong seed)
        {
            _seed = seed;
            _v1 = seed + Prime1 + Prime2;
            _v2 = seed + Prime2;
            _v3 = seed;
            _v4 = seed - Prime1;
        }

        /// <summary>Feeds more bytes.</summary>
        public void Append(ReadOnlySpan<byte> data)
        {
            _total += (ulong)data.Length;
            Span<byte> buf = _buffer;
            if (_buffered > 0)
            {
                int take = Math.Min(32 - _buffered, data.Length);
                data[..take].CopyTo(buf[_buffered..]);
                _buffered += take;
                data = data[take..];
                if (_buffered < 32)
                    return;
                Stripe(buf);
                _buffered = 0;
            }
            while (data.Length >= 32)
            {
                Stripe(data);
                data = data[32..];
            }
            data.CopyTo(buf);
            _buffered = data.Length;
        }

        private void Stripe(ReadOnlySpan<byte> s)
        {
            _v1 = Round(_v1, BinaryPrimitives.ReadUInt64LittleEndian(s));
            _v2 = Round(_v2, BinaryPrimitives.ReadUInt64LittleEndian(s[8..]));
            _v3 = Round(_v3, BinaryPrimitives.ReadUInt64LittleEndian(s[16..]));
            _v4 = Round(_v4, BinaryPrimitives.ReadUInt64LittleEndian(s[24..]));
        }

        /// <summary>The hash of everything appended so far.</summary>
        public readonly ulong Digest()
        {
            ulong h;
            if (_total >= 32)
            {
                h = BitOperations.RotateLeft(_v1, 1) + BitOperations.RotateLeft(_v2, 7)
                  + BitOperations.RotateLeft(_v3, 12) + BitOperations.RotateLeft(_v4, 18);
                h = Merge(h, _v1);
                h = Merge(h, _v2);
                h = Merge(h, _v3);
                h = Merge(h, _v4);
            }
            else
            {
                h = _seed + Prime5;
            }
            h += _total;
            ReadOnlySpan<byte> rest = ((ReadOnlySpan<byte>)_buffer)[.._buffered];
            while (rest.Length >= 8)
            {
                h ^= Round(0, BinaryPrimitives.ReadUInt64LittleEndian(rest));
                h = BitOperations.RotateLeft(h, 27) * Prime1 + Prime4;
                rest = rest[8..];
            }
            if (rest.Length >= 4)
            {
                h ^= BinaryPrimitives.ReadUInt32LittleEndian(rest) * Prime1;
                h = BitOperations.RotateLeft(h, 23) * Prime2 + Prime3;
                rest = rest[4..];
            }
            foreach (byte b in rest)
            {
                h ^= b * Prime5;
                h = BitOperations.RotateLeft(h, 11) * Prime1;
            }
            h ^= h >> 33;
            h *= Prime2;
            h ^= h >> 29;
            h *= Prime3;
            h ^= h >> 32;
            return h;
        }

        private static ulong Round(ulong acc, ulong input)
        {
            acc += input * Prime2;
            acc = BitOperations.RotateLeft(acc, 31);
            return acc * Prime1;
        }

        private static ulong Merge(ulong acc, ulong v)
        {
            acc ^= Round(0, v);
            return acc * Prime1 + Prime4;
        }
    }

    [System.Runtime.CompilerServices.InlineArray(32)]
    private struct InlineBuffer
    {
        private byte _element0;
    }
}
