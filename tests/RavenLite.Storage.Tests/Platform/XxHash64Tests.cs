namespace RavenLite.Storage.Tests.Platform;

/// <summary>
/// The journal's and headers' checksums are standard XXH64 (docs/format/journal.md), now computed by
/// System.IO.Hashing: it must give the vectors of the reference xxHash library (Debian's python3-xxhash,
/// xxhash.xxh64) that the engine's files were written with — split or whole — and the journal's record hash
/// (header then body, seeded with the transaction id) must be the hash of the two joined.
/// </summary>
public class XxHash64Tests
{
    public static TheoryData<byte[], ulong, ulong> Vectors => new()
    {
        { [], 0UL, 0xef46db3751d8e999UL },
        { "a"u8.ToArray(), 0UL, 0xd24ec4f1a98c6e5bUL },
        { "abc"u8.ToArray(), 0UL, 0x44bc2cf5ad770999UL },
        { "abc"u8.ToArray(), 42UL, 0x13c1d910702770e6UL },
        { Enumerable.Range(0, 100).Select(i => (byte)i).ToArray(), 0UL, 0x6ac1e58032166597UL },
        { Enumerable.Range(0, 100).Select(i => (byte)i).ToArray(), 12345UL, 0x28ba1ae2de4de27UL },
        { "0123456789abcdef0123456789abcdef!"u8.ToArray(), 7UL, 0xc1efd54a62ef942fUL },
    };

    [Theory]
    [MemberData(nameof(Vectors))]
    public void Matches_reference_vectors(byte[] data, ulong seed, ulong expected)
    {
        Assert.Equal(expected, System.IO.Hashing.XxHash64.HashToUInt64(data, unchecked((long)seed)));
        // The incremental form gives the same answer however the input is split.
        for (int split = 0; split <= data.Length; split += 7)
        {
            var s = new System.IO.Hashing.XxHash64(unchecked((long)seed));
            s.Append(data.AsSpan(0, split));
            s.Append(data.AsSpan(split));
            Assert.Equal(expected, s.GetCurrentHashAsUInt64());
        }
    }
}
