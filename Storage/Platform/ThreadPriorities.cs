namespace RavenLite.Storage.Platform;

/// <summary>
/// CPU priority (nice value) of single threads, for background work such as a backup or an index worker. .NET's
/// <see cref="Thread.Priority"/> has no effect on Linux; a thread's nice value does. Raising it (lower priority) needs
/// no privilege; lowering it below 0 needs CAP_SYS_NICE and otherwise fails (false).
/// </summary>
public static class ThreadPriorities
{
    /// <summary>The calling thread's kernel id (0 where not Linux), for <see cref="SetNice"/> from another thread.</summary>
    public static int CurrentThreadId() => OperatingSystem.IsLinux() ? Native.gettid() : 0;

    /// <summary>Sets thread <paramref name="threadId"/>'s nice value (−20..19); false where the OS refused or it is not Linux.</summary>
    public static bool SetNice(int threadId, int nice)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(nice, -20);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(nice, 19);
        if (!OperatingSystem.IsLinux() || threadId == 0)
            return false;
        return Native.setpriority(0, threadId, nice) == 0;
    }

    /// <summary>Sets the calling thread's nice value to <paramref name="nice"/> (0..19, default the lowest priority).</summary>
    public static bool LowerCurrentThread(int nice = 19)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(nice);
        return SetNice(CurrentThreadId(), nice);
    }
}
