using RavenLite.Storage;
using RavenLite.Storage.Checking;
using RavenLite.Storage.Platform;

namespace RavenLite.TestKit;

/// <summary>
/// An environment for a storage test: in memory by default (docs/conventions.md §7), or on real files;
/// <see cref="Restart"/> disposes and reopens it (recovery runs), and disposing the harness runs
/// the consistency checker and fails the test on any finding.
/// </summary>
public sealed class StorageHarness : IDisposable
{
    private readonly TempDirectory? _dir;
    private readonly Func<StorageOptions, StorageOptions> _configure;

    private StorageHarness(StorageOptions options, TempDirectory? dir, Func<StorageOptions, StorageOptions> configure)
    {
        _dir = dir;
        _configure = configure;
        BaseOptions = options;
        Env = StorageEnvironment.Open(configure(options));
    }

    /// <summary>The open environment.</summary>
    public StorageEnvironment Env { get; private set; }

    /// <summary>Options before <see cref="_configure"/>.</summary>
    public StorageOptions BaseOptions { get; }

    /// <summary>The memory file system of an in-memory harness.</summary>
    public MemoryFileSystem? Memory => BaseOptions.FileSystem as MemoryFileSystem;

    /// <summary>An in-memory environment.</summary>
    public static StorageHarness InMemory(Func<StorageOptions, StorageOptions>? configure = null, DurabilityMode durability = DurabilityMode.Sync) =>
        new(StorageOptions.ForMemory(durability: durability), null, configure ?? (o => o));

    /// <summary>An environment on real files in a temp directory.</summary>
    public static StorageHarness OnDisk(Func<StorageOptions, StorageOptions>? configure = null, DurabilityMode durability = DurabilityMode.Sync)
    {
        var dir = new TempDirectory("ravenlite-storage");
        return new(StorageOptions.ForDirectory(dir.Path, durability), dir, configure ?? (o => o));
    }

    /// <summary>Closes and reopens the environment (recovery runs).</summary>
    public StorageEnvironment Restart()
    {
        Env.Dispose();
        Env = StorageEnvironment.Open(_configure(BaseOptions));
        return Env;
    }

    /// <summary>Runs the checker and throws when it finds anything.</summary>
    public static void AssertConsistent(StorageEnvironment env)
    {
        var report = StorageChecker.Check(env);
        if (!report.IsValid)
            throw new InvalidOperationException("Storage checker: " + report);
    }

    /// <inheritdoc />
    public void Dispose()
    {
        try
        {
            AssertConsistent(Env);
        }
        finally
        {
            Env.Dispose();
            Memory?.Dispose();
            _dir?.Dispose();
        }
    }
}
