namespace RavenLite.Storage;

/// <summary>Format-wide constants. Changing any of them changes the on-disk format (docs/format/).</summary>
public static class StorageConstants
{
    /// <summary>Bytes per page in the data file and in journal records.</summary>
    public const int PageSize = 8192;

    /// <summary>On-disk format version written in the file header: 3 since pages carry checksums.</summary>
    public const int FormatVersion = 3;

    /// <summary>The oldest format this build opens: a format-2 environment gets its page checksums at open, then is format 3.</summary>
    public const int OldestFormatVersion = 2;

    /// <summary>Longest key a tree accepts, in bytes.</summary>
    public const int MaxKeySize = 1024;

    /// <summary>Largest value a tree accepts, in bytes (256 MiB); a transaction must also fit one LZ4 block.</summary>
    public const int MaxValueSize = 256 * 1024 * 1024;

    /// <summary>Largest node kept inside a leaf; bigger values go to overflow pages. A quarter page, so any split fits.</summary>
    public const int MaxNodeSize = (PageSize - Paging.PageHeader.SizeOf) / 4 - sizeof(ushort);
}
