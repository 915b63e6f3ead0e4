using System.Globalization;
using System.Runtime.InteropServices;

namespace RavenLite.Bench;

/// <summary>
/// The suite's keys (16-digit zero-padded decimals) and values (100 random bytes, seed 42), laid out
/// in two pinned arrays so both engines read the same bytes without per-operation allocation.
/// </summary>
internal sealed class BenchData
{
    public const int KeySize = 16;
    public const int ValueSize = 100;

    public BenchData(int count)
    {
        Count = count;
        Keys = GC.AllocateArray<byte>(count * KeySize, pinned: true);
        Values = GC.AllocateArray<byte>(count * ValueSize, pinned: true);
        for (int i = 0; i < count; i++)
            System.Text.Encoding.ASCII.GetBytes(i.ToString("0000000000000000", CultureInfo.InvariantCulture), Keys.AsSpan(i * KeySize, KeySize));
        new Random(42).NextBytes(Values);
        KeysAddress = Marshal.UnsafeAddrOfPinnedArrayElement(Keys, 0);
        ValuesAddress = Marshal.UnsafeAddrOfPinnedArrayElement(Values, 0);
        RandomOrder = Enumerable.Range(0, count).ToArray();
        new Random(7).Shuffle(RandomOrder);
    }

    public int Count { get; }

    public byte[] Keys { get; }

    public byte[] Values { get; }

    public IntPtr KeysAddress { get; }

    public IntPtr ValuesAddress { get; }

    /// <summary>A fixed random permutation of [0, Count).</summary>
    public int[] RandomOrder { get; }

    public ReadOnlySpan<byte> Key(int i) => Keys.AsSpan(i * KeySize, KeySize);

    public ReadOnlySpan<byte> Value(int i) => Values.AsSpan(i * ValueSize, ValueSize);
}
