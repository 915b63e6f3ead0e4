using System.Numerics;

namespace RavenLite.Server.TimeSeries;

/// <summary>One time-series entry: a UTC time in milliseconds since 0001-01-01, its values (1..32) and an optional tag.</summary>
public readonly record struct TimeSeriesPoint(long Milliseconds, double[] Values, string? Tag)
{
    /// <summary>The entry's time.</summary>
    public DateTime Timestamp => new(Milliseconds * TimeSpan.TicksPerMillisecond, DateTimeKind.Utc);

    /// <summary>Milliseconds of a time (UTC).</summary>
    public static long ToMilliseconds(DateTime t) => t.ToUniversalTime().Ticks / TimeSpan.TicksPerMillisecond;
}

/// <summary>
/// The compressed form of a run of entries (docs/format/documents.md "Time series"): a header — format (1 byte),
/// first time (int64 ms), entry count (int32), tag count (uint8) and tags (uint16 length + UTF-8 each) — then a bit
/// stream, per entry: the time as a delta-of-delta against the previous two (<c>0</c> for the same interval, else a
/// prefix and 7, 12, 20 or 64 zig-zag bits), the value count (<c>0</c> unchanged, else <c>1</c> + 5 bits), the tag
/// (<c>0</c> unchanged, else <c>1</c> + 8 bits: 0 none, n the n-th tag), then each value XORed with the previous value in
/// its position, Gorilla-style (<c>0</c> equal; <c>10</c> + the bits inside the previous window; <c>11</c> + 5 bits of
/// leading zeros + 6 bits of length − 1 + the meaningful bits). A series of regular times and slowly moving values takes
/// about 1–3 bytes per entry.
/// </summary>
public static class TimeSeriesSegment
{
    private const byte Format = 1;

    /// <summary>An encoded segment is closed once it reaches this many bytes (it stays inside a B+Tree leaf).</summary>
    public const int MaxBytes = 1800;

    /// <summary>Most tags one segment holds.</summary>
    public const int MaxTags = 255;

    /// <summary>Most values per entry.</summary>
    public const int MaxValues = 32;

    /// <summary>
    /// Encodes <paramref name="points"/> (sorted by time, distinct times) into segments of at most <see cref="MaxBytes"/>
    /// (and <see cref="MaxTags"/> tags); each element is (first time, bytes).
    /// </summary>
    public static List<(long Start, byte[] Bytes)> Encode(IReadOnlyList<TimeSeriesPoint> points)
    {
        var result = new List<(long, byte[])>();
        int i = 0;
        while (i < points.Count)
        {
            var encoder = new Encoder(points[i].Milliseconds);
            while (i < points.Count && encoder.TryAdd(points[i]))
                i++;
            result.Add((encoder.Start, encoder.ToArray()));
        }
        return result;
    }

    /// <summary>The entries of a segment, in time order.</summary>
    public static List<TimeSeriesPoint> Decode(ReadOnlySpan<byte> segment)
    {
        if (segment.IsEmpty || segment[0] != Format)
            throw new InvalidDataException("Not a time-series segment (unknown format byte).");
        long previous = BinaryPrimitives.ReadInt64LittleEndian(segment[1..]);
        int count = BinaryPrimitives.ReadInt32LittleEndian(segment[9..]);
        int tagCount = segment[13];
        int at = 14;
        var tags = new string?[tagCount + 1];
        for (int t = 1; t <= tagCount; t++)
        {
            int len = BinaryPrimitives.ReadUInt16LittleEndian(segment[at..]);
            tags[t] = Encoding.UTF8.GetString(segment.Slice(at + 2, len));
            at += 2 + len;
        }
        var reader = new BitReader(segment[at..]);
        var points = new List<TimeSeriesPoint>(count);
        long delta = 0;
        int valueCount = 1, tag = 0;
        var last = new ulong[MaxValues];
        var leading = new int[MaxValues];
        var meaningful = new int[MaxValues];
        for (int p = 0; p < count; p++)
        {
            long dod;
            if (reader.Bit() == 0)
                dod = 0;
            else if (reader.Bit() == 0)
                dod = Unzig(reader.Bits(7));
            else if (reader.Bit() == 0)
                dod = Unzig(reader.Bits(12));
            else if (reader.Bit() == 0)
                dod = Unzig(reader.Bits(20));
            else
                dod = Unzig(reader.Bits(64));
            delta = p == 0 ? 0 : delta + dod;
            long time = previous + delta;
            previous = time;
            if (reader.Bit() == 1)
                valueCount = (int)reader.Bits(5) + 1;
            if (reader.Bit() == 1)
                tag = (int)reader.Bits(8);
            var values = new double[valueCount];
            for (int v = 0; v < valueCount; v++)
            {
                if (reader.Bit() == 1)
                {
                    if (reader.Bit() == 1)
                    {
                        leading[v] = (int)reader.Bits(5);
                        meaningful[v] = (int)reader.Bits(6) + 1;
                    }
                    ulong bits = reader.Bits(meaningful[v]);
                    last[v] ^= bits << (64 - leading[v] - meaningful[v]);
                }
                values[v] = BitConverter.UInt64BitsToDouble(last[v]);
            }
            points.Add(new TimeSeriesPoint(time, values, tags[tag]));
        }
        return points;
    }

    /// <summary>The entry count and first/last times of a segment, from its header and without decoding the values.</summary>
    public static (int Count, long Start) Header(ReadOnlySpan<byte> segment) =>
        (BinaryPrimitives.ReadInt32LittleEndian(segment[9..]), BinaryPrimitives.ReadInt64LittleEndian(segment[1..]));

    private static ulong Zig(long v) => (ulong)((v << 1) ^ (v >> 63));

    private static long Unzig(ulong v) => (long)(v >> 1) ^ -(long)(v & 1);

    /// <summary>Builds one segment entry by entry, refusing an entry that would take it past its limits.</summary>
    private sealed class Encoder(long start)
    {
        private readonly BitWriter _bits = new();
        private readonly List<string> _tags = [];
        private int _tagBytes;
        private int _count;
        private long _previous = start, _delta;
        private int _valueCount = 1, _tag;
        private readonly ulong[] _last = new ulong[MaxValues];
        private readonly int[] _leading = new int[MaxValues];
        private readonly int[] _meaningful = new int[MaxValues];

        public long Start { get; } = start;

        private int HeaderBytes => 14 + _tagBytes;

        public bool TryAdd(TimeSeriesPoint point)
        {
            if (_count > 0 && HeaderBytes + _bits.ByteLength >= MaxBytes)
                return false;
            int tag = 0;
            if (point.Tag != null)
            {
                tag = _tags.IndexOf(point.Tag) + 1;
                if (tag == 0)
                {
                    if (_tags.Count >= MaxTags && _count > 0)
                        return false;
                    _tags.Add(point.Tag);
                    _tagBytes += 2 + Encoding.UTF8.GetByteCount(point.Tag);
                    tag = _tags.Count;
                }
            }
            long delta = point.Milliseconds - _previous;
            long dod = _count == 0 ? 0 : delta - _delta;
            if (dod == 0)
            {
                _bits.Write(0, 1);
            }
            else
            {
                ulong z = Zig(dod);
                if (z < 1UL << 7)
                    _bits.Write(0b10, 2).Write(z, 7);
                else if (z < 1UL << 12)
                    _bits.Write(0b110, 3).Write(z, 12);
                else if (z < 1UL << 20)
                    _bits.Write(0b1110, 4).Write(z, 20);
                else
                    _bits.Write(0b1111, 4).Write(z, 64);
            }
            _delta = _count == 0 ? 0 : delta;
            _previous = point.Milliseconds;
            if (point.Values.Length == _valueCount)
            {
                _bits.Write(0, 1);
            }
            else
            {
                _bits.Write(1, 1).Write((ulong)(point.Values.Length - 1), 5);
                _valueCount = point.Values.Length;
            }
            if (tag == _tag)
            {
                _bits.Write(0, 1);
            }
            else
            {
                _bits.Write(1, 1).Write((ulong)tag, 8);
                _tag = tag;
            }
            for (int v = 0; v < point.Values.Length; v++)
            {
                ulong value = BitConverter.DoubleToUInt64Bits(point.Values[v]);
                ulong xor = value ^ _last[v];
                _last[v] = value;
                if (xor == 0)
                {
                    _bits.Write(0, 1);
                    continue;
                }
                int lead = Math.Min(BitOperations.LeadingZeroCount(xor), 31), trail = BitOperations.TrailingZeroCount(xor);
                if (_meaningful[v] > 0 && lead >= _leading[v] && trail >= 64 - _leading[v] - _meaningful[v])
                {
                    _bits.Write(0b10, 2).Write(xor >> (64 - _leading[v] - _meaningful[v]), _meaningful[v]);
                    continue;
                }
                int length = 64 - lead - trail;
                _leading[v] = lead;
                _meaningful[v] = length;
                _bits.Write(0b11, 2).Write((ulong)lead, 5).Write((ulong)(length - 1), 6).Write(xor >> trail, length);
            }
            _count++;
            return true;
        }

        public byte[] ToArray()
        {
            var bits = _bits.ToArray();
            var bytes = new byte[HeaderBytes + bits.Length];
            bytes[0] = Format;
            BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(1), Start);
            BinaryPrimitives.WriteInt32LittleEndian(bytes.AsSpan(9), _count);
            bytes[13] = (byte)_tags.Count;
            int at = 14;
            foreach (string t in _tags)
            {
                int len = Encoding.UTF8.GetBytes(t, bytes.AsSpan(at + 2));
                BinaryPrimitives.WriteUInt16LittleEndian(bytes.AsSpan(at), (ushort)len);
                at += 2 + len;
            }
            bits.CopyTo(bytes, at);
            return bytes;
        }
    }

    /// <summary>Writes bits most significant first, through a 64-bit accumulator.</summary>
    private sealed class BitWriter
    {
        private byte[] _buffer = new byte[256];
        private int _bytes;
        private ulong _acc;
        private int _accBits;

        public int ByteLength => _bytes + (_accBits + 7) / 8;

        public BitWriter Write(ulong value, int count)
        {
            if (count == 0)
                return this;
            if (count < 64)
                value &= (1UL << count) - 1;
            int free = 64 - _accBits;
            if (count <= free)
            {
                _acc |= count == free ? value : value << (free - count);
                _accBits += count;
                if (_accBits == 64)
                    Flush();
            }
            else
            {
                int rest = count - free;
                _acc |= value >> rest;
                _accBits = 64;
                Flush();
                _acc = value << (64 - rest);
                _accBits = rest;
            }
            return this;
        }

        private void Flush()
        {
            if (_bytes + 8 > _buffer.Length)
                Array.Resize(ref _buffer, _buffer.Length * 2);
            BinaryPrimitives.WriteUInt64BigEndian(_buffer.AsSpan(_bytes), _acc);
            _bytes += 8;
            _acc = 0;
            _accBits = 0;
        }

        public byte[] ToArray()
        {
            var result = new byte[ByteLength];
            _buffer.AsSpan(0, _bytes).CopyTo(result);
            Span<byte> tail = stackalloc byte[8];
            BinaryPrimitives.WriteUInt64BigEndian(tail, _acc);
            tail[..(result.Length - _bytes)].CopyTo(result.AsSpan(_bytes));
            return result;
        }
    }

    /// <summary>Reads what <see cref="BitWriter"/> wrote.</summary>
    private ref struct BitReader(ReadOnlySpan<byte> bytes)
    {
        private readonly ReadOnlySpan<byte> _bytes = bytes;
        private long _position;

        public int Bit()
        {
            int b = (_bytes[(int)(_position >> 3)] >> (7 - (int)(_position & 7))) & 1;
            _position++;
            return b;
        }

        public ulong Bits(int count)
        {
            ulong v = 0;
            while (count > 0)
            {
                int offset = (int)(_position & 7);
                int take = Math.Min(count, 8 - offset);
                int bits = (_bytes[(int)(_position >> 3)] >> (8 - offset - take)) & ((1 << take) - 1);
                v = (v << take) | (uint)bits;
                _position += take;
                count -= take;
            }
            return v;
        }
    }
}
