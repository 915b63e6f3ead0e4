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

    /// <summary>
    /// The payload (an LZ4 block, or stored) is sealed with the environment's key (an encrypted environment): the
    /// <c>CompressedSize</c> bytes after the header are the sealed payload then its 16-byte tag; the nonce is in bytes
    /// 96–119 of the header, and bytes 0–95 are authenticated with it.
    /// </summary>
    Encrypted = 2,
}
