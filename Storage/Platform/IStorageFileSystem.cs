namespace RavenLite.Storage.Platform;

/// <summary>
/// The engine's one I/O seam: every file creation, write, fsync, growth and directory sync goes
/// through here, so tests can swap in <see cref="MemoryFileSystem"/> or wrap any file system in
/// the test kit's fault-injecting file system (fail the Nth operation, drop or tear unsynced writes,
/// report a full disk). Paths are absolute or relative to the environment's directory as given.
/// </summary>
public interface IStorageFileSystem
{
    /// <summary>Opens a file, creating an empty one when <paramref name="create"/> is true and it is missing.</summary>
    /// <exception cref="FileNotFoundException">missing and not created.</exception>
    IStorageFile OpenFile(string path, bool create);

    /// <summary>True when the file exists.</summary>
    bool FileExists(string path);

    /// <summary>Deletes a file if it exists.</summary>
    void DeleteFile(string path);

    /// <summary>Renames a file, replacing the target.</summary>
    void RenameFile(string source, string destination);

    /// <summary>File names (not paths) directly inside a directory; empty when it does not exist.</summary>
    IReadOnlyList<string> ListFiles(string directory);

    /// <summary>Creates a directory and its parents.</summary>
    void CreateDirectory(string path);

    /// <summary>fsyncs a directory so created, renamed or deleted entries survive a power loss.</summary>
    void SyncDirectory(string path);
}
