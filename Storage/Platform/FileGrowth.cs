namespace RavenLite.Storage.Platform;

/// <summary>Growing a file on a disk that may be full: the size wanted, or else the largest of halving steps that fits.</summary>
internal static class FileGrowth
{
    /// <summary>
    /// Grows <paramref name="file"/> to <paramref name="preferred"/> bytes, or when the disk has no room for that, to the
    /// largest of halving steps between its length and <paramref name="preferred"/> that fits, down to
    /// <paramref name="minimum"/>. Sizes are rounded up to <paramref name="unit"/>. Returns the file's new length.
    /// </summary>
    /// <exception cref="DiskFullException">not even <paramref name="minimum"/> fits; <paramref name="refusal"/> words it from the file system's error.</exception>
    public static long Allocate(IStorageFile file, long preferred, long minimum, int unit, Func<Exception, string> refusal)
    {
        long current = file.Length;
        minimum = Round(minimum, unit);
        long target = Round(Math.Max(preferred, minimum), unit);
        while (true)
        {
            try
            {
                file.Allocate(target);
                return Math.Max(target, file.Length);
            }
            catch (Exception e) when (DiskFullException.IsDiskFull(e))
            {
                if (target <= minimum)
                    throw new DiskFullException(refusal(e), e) { BytesNeeded = Math.Max(0, minimum - file.Length) };
                target = Round(Math.Max(minimum, current + (target - current) / 2), unit);
            }
        }
    }

    private static long Round(long bytes, int unit) => (bytes + unit - 1) / unit * unit;
}
