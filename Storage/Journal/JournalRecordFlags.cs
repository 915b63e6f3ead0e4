namespace RavenLite.Storage.Journal;

/// <summary>Journal record flags, persisted (values frozen by FormatTests).</summary>
[Flags]
public enum JournalRecordFlags : uint
{
    /// <summary>Payload is one LZ4 block of page entries.</summary>
    None = 0,

    /// <summary>
    /// Payload is stored as is (<c>CompressedSize == UncompressedSize</c>): written for large records
    /// whose sampled LZ4 ratio is below <c>1.25</c>, where compressing costs more time than the bytes it saves.
    /// </summary>
    Stored = 1,
}
