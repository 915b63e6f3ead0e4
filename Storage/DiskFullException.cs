namespace RavenLite.Storage;

/// <summary>
/// The disk (or the user's quota) has no room for what a write needs: ENOSPC or EDQUOT from growing the
/// data file, pre-allocating a journal file, or a write. Unlike <see cref="StorageFailedException"/> it does
/// not stop the environment: the write that needed the space was not committed (nothing of it is visible),
/// everything acknowledged before stays, reads go on, and writes succeed again once space is freed.
/// </summary>
public sealed class DiskFullException : IOException
{
    /// <summary>errno ENOSPC (Linux).</summary>
    public const int ENOSPC = 28;

    /// <summary>errno EDQUOT (Linux).</summary>
    public const int EDQUOT = 122;

    /// <summary>Creates one; <paramref name="inner"/> is the file system's error.</summary>
    public DiskFullException(string message, Exception? inner = null) : base(message, inner) => HResult = ENOSPC;

    /// <summary>Bytes the refused growth needed at least (0 when unknown): once the volume has that much free, the condition is over.</summary>
    public long BytesNeeded { get; init; }

    /// <summary>
    /// Whether <paramref name="e"/> or an exception inside it reports a full disk or quota: this type, or an
    /// <see cref="IOException"/> whose HResult is the errno ENOSPC/EDQUOT (as .NET and our P/Invoke layer set it on
    /// Linux), or whose message is the C library's text for them (libraries that rewrap the error).
    /// </summary>
    public static bool IsDiskFull(Exception? e)
    {
        for (int depth = 0; e != null && depth < 8; depth++, e = e.InnerException)
        {
            if (e is DiskFullException)
                return true;
            if (e is IOException io && (io.HResult is ENOSPC or EDQUOT
                || io.Message.Contains("No space left on device", StringComparison.OrdinalIgnoreCase)
                || io.Message.Contains("Disk quota exceeded", StringComparison.OrdinalIgnoreCase)))
                return true;
        }
        return false;
    }
}
