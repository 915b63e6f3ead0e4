namespace RavenLite.Storage.Journal;

/// <summary>Journal record flags, persisted (values frozen by FormatTests).</summary>
[Flags]
public enum JournalRecordFlags : uint
{
    /// <summary>Payload is one LZ4 block of page entries.</summary>
    None = 0,
}
