namespace RavenLite.Storage.Journal;

/// <summary>Where recovery puts replayed pages: the data file, which also supplies the base pages that diff entries apply to.</summary>
internal interface IRecoveryTarget
{
    /// <summary>Writes a run of pages at its place, growing the file as needed.</summary>
    void Write(long pageNumber, int pageCount, ReadOnlySpan<byte> pages);

    /// <summary>The current content of one page (as replayed so far).</summary>
    ReadOnlySpan<byte> Read(long pageNumber);
}
