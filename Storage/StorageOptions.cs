using RavenLite.Storage.Platform;

namespace RavenLite.Storage;

/// <summary>
/// How a <see cref="StorageEnvironment"/> is opened. Create with <see cref="ForDirectory"/> or
/// <see cref="ForMemory"/>; every setting has a documented default and unit and is checked by
/// <see cref="Validate"/> when the environment opens.
/// </summary>
public sealed class StorageOptions
{
    /// <summary>Directory holding <c>data</c>, <c>headers</c> and <c>journal/</c>.</summary>
    public required string Directory { get; init; }

    /// <summary>The I/O seam. Default: the real disk.</summary>
    public IStorageFileSystem FileSystem { get; init; } = DiskFileSystem.Instance;

    /// <summary>What a commit waits for. Default <see cref="DurabilityMode.Sync"/>.</summary>
    public DurabilityMode Durability { get; init; } = DurabilityMode.Sync;

    /// <summary>Size of each preallocated journal file, bytes. Default 64 MiB; minimum 64 KiB. A larger record gets a file of its own size.</summary>
    public long JournalFileSize { get; init; } = 64L << 20;

    /// <summary>Spare journal files kept for reuse after their records are synced. Default 2.</summary>
    public int MaxRecycledJournals { get; init; } = 2;

    /// <summary>
    /// Flush when this many committed pages wait in memory to be copied to the data file. Default 32,768 pages (256 MiB).
    /// A flush writes each waiting page once however many commits changed it, and first saves the before-image of every
    /// page it overwrites: the more commits a flush spans, the fewer bytes each commit costs (docs/benchmarks.md, storage).
    /// </summary>
    public int FlushThresholdPages { get; init; } = 32_768;

    /// <summary>
    /// Flush at least this often while anything is waiting, milliseconds. Default 5000. The journal holds every commit
    /// until then (<see cref="DurabilityMode.None"/> has no journal: its commits are on disk only after a flush).
    /// </summary>
    public int FlushIntervalMs { get; init; } = 5000;

    /// <summary>
    /// Flush also when the committed and in-flight pages of every environment in the process together pass this many
    /// (the shared page pool's pages in use), once this environment has at least <see cref="StorageEnvironment.MinPressureFlushPages"/>
    /// waiting. Default 65,536 pages (512 MiB): several busy databases share one memory budget instead of each
    /// holding up to <see cref="FlushThresholdPages"/>.
    /// </summary>
    public long ProcessPageBudget { get; init; } = 65_536;

    /// <summary>When false, no background flusher runs; flushes happen only through <see cref="StorageEnvironment.Flush"/> and on dispose. Default true.</summary>
    public bool BackgroundFlush { get; init; } = true;

    /// <summary>Data-file growth step, bytes. Default 16 MiB (the file grows by at least this, or by an eighth of its size up to 1 GiB steps).</summary>
    public long DataFileGrowthStep { get; init; } = 16L << 20;

    /// <summary>Address space reserved for mapping the data file, bytes. Default 64 GiB; the mapping is enlarged when the file outgrows it.</summary>
    public long InitialMapSize { get; init; } = 64L << 30;

    /// <summary>
    /// The key of an encrypted environment (docs/format/data-file.md "Encrypted environments"): pages, journal records
    /// and undo images are sealed with it. Null (the default): nothing is encrypted. An environment created with a key
    /// opens only with that key; one created without opens only without.
    /// </summary>
    public Encryption.EncryptionKey? EncryptionKey { get; init; }

    /// <summary>Most bytes of opened (decrypted) pages an encrypted environment keeps; the oldest go first. Default 512 MiB.</summary>
    public long OpenedPagesCacheBytes { get; init; } = 512L << 20;

    /// <summary>Options for a directory on the real disk.</summary>
    public static StorageOptions ForDirectory(string directory, DurabilityMode durability = DurabilityMode.Sync) =>
        new() { Directory = Path.GetFullPath(directory), Durability = durability };

    /// <summary>Options for a memory-only environment on <paramref name="fileSystem"/> (a new one when null). Reopening the same file system recovers as on disk.</summary>
    public static StorageOptions ForMemory(MemoryFileSystem? fileSystem = null, DurabilityMode durability = DurabilityMode.Sync) =>
        new() { Directory = "/mem", FileSystem = fileSystem ?? new MemoryFileSystem(), Durability = durability, InitialMapSize = 1L << 30 };

    /// <summary>Throws <see cref="ArgumentException"/> naming the first invalid setting.</summary>
    public void Validate()
    {
        if (string.IsNullOrWhiteSpace(Directory))
            throw new ArgumentException("StorageOptions.Directory must be set.");
        if (!Enum.IsDefined(Durability))
            throw new ArgumentException($"StorageOptions.Durability {Durability} is not a known mode.");
        if (JournalFileSize < 64 * 1024 || JournalFileSize % StorageConstants.PageSize != 0)
            throw new ArgumentException($"StorageOptions.JournalFileSize must be at least 65536 bytes and a multiple of {StorageConstants.PageSize}; got {JournalFileSize}.");
        if (MaxRecycledJournals < 0)
            throw new ArgumentException("StorageOptions.MaxRecycledJournals must be >= 0.");
        if (FlushThresholdPages < 1)
            throw new ArgumentException("StorageOptions.FlushThresholdPages must be >= 1.");
        if (ProcessPageBudget < 1)
            throw new ArgumentException("StorageOptions.ProcessPageBudget must be >= 1.");
        if (FlushIntervalMs < 1)
            throw new ArgumentException("StorageOptions.FlushIntervalMs must be >= 1.");
        if (DataFileGrowthStep < StorageConstants.PageSize)
            throw new ArgumentException("StorageOptions.DataFileGrowthStep must be at least one page.");
        if (InitialMapSize < 1L << 20)
            throw new ArgumentException("StorageOptions.InitialMapSize must be at least 1 MiB.");
        if (OpenedPagesCacheBytes < 64 * StorageConstants.PageSize)
            throw new ArgumentException("StorageOptions.OpenedPagesCacheBytes must be at least 64 pages.");
    }
}
