using RavenLite.Storage;

namespace RavenLite.Bench;

/// <summary>One engine under the storage suite. Each instance is one fresh database in its own directory.</summary>
internal interface IBenchEngine : IDisposable
{
    /// <summary>Engine name in the rows: "ravenlite" or the peer's.</summary>
    string Name { get; }

    /// <summary>Puts key/value <c>order[i]</c> for every i, <paramref name="perTransaction"/> puts per committed transaction.</summary>
    void Fill(BenchData data, int[] order, int count, int perTransaction);

    /// <summary>Deletes key <c>order[i]</c> for every i in [<paramref name="start"/>, <paramref name="start"/> + <paramref name="count"/>), <paramref name="perTransaction"/> deletes per committed transaction.</summary>
    void Delete(BenchData data, int[] order, int start, int count, int perTransaction);

    /// <summary>Walks every entry with a cursor in one read transaction; returns the count.</summary>
    long ReadSequential();

    /// <summary>Point-reads <paramref name="count"/> keys of <paramref name="order"/> from <paramref name="start"/> in one read transaction (one per thread).</summary>
    void ReadRandom(BenchData data, int[] order, int start, int count);

    /// <summary>Journal bytes written (RavenLite) or null.</summary>
    long? JournalBytes { get; }

    /// <summary>Modified page bytes before compression (RavenLite) or null.</summary>
    long? RawPageBytes { get; }

    /// <summary>Data file size now.</summary>
    long DataFileBytes { get; }
}

/// <summary>Creates engines for a row.</summary>
internal delegate IBenchEngine EngineFactory(string directory, DurabilityMode durability);
