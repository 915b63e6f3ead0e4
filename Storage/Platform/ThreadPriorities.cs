namespace RavenLite.Storage.Platform;

/// <summary>
/// Lowers the calling thread's CPU priority (its nice value) for long background work such as a backup, so that
/// request threads win the CPU. .NET's <see cref="Thread.Priority"/> has no effect on Linux; a thread's nice value
/// does, and raising it needs no privilege.
/// </summary>
public static class ThreadPriorities
{
    /// <summary>Sets the calling thread's nice value to <paramref name="nice"/> (0..19); false where the OS refused.</summary>
    public static bool LowerCurrentThread(int nice = 19)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(nice);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(nice, 19);
        if (!OperatingSystem.IsLinux())
            return false;
        return Native.setpriority(0, Native.gettid(), nice) == 0;
    }
}
