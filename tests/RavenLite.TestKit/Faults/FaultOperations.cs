namespace RavenLite.TestKit.Faults;

/// <summary>Which operations a <see cref="FaultInjectingFileSystem"/> counts and may fail.</summary>
[Flags]
public enum FaultOperations
{
    /// <summary>No operations.</summary>
    None = 0,
    /// <summary>File writes.</summary>
    Write = 1,
    /// <summary>fsync/fdatasync of files and directories.</summary>
    Sync = 2,
    /// <summary>File growth (fallocate).</summary>
    Allocate = 4,
    /// <summary>File reads through the seam (not mmap reads).</summary>
    Read = 8,
    /// <summary>File creation, rename and delete.</summary>
    Metadata = 16,
    /// <summary>Everything.</summary>
    All = Write | Sync | Allocate | Read | Metadata,
}
