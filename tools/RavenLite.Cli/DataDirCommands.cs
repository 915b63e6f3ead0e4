using System.Globalization;
using System.Text;
using RavenLite.Storage;
using RavenLite.Storage.Checking;

namespace RavenLite.Cli;

/// <summary>The CLI's commands over a storage directory. Each returns the process exit code.</summary>
internal static class DataDirCommands
{
    private static StorageEnvironment Open(DirectoryInfo dir)
    {
        if (!File.Exists(Path.Combine(dir.FullName, "headers")))
            throw new DirectoryNotFoundException($"'{dir.FullName}' is not a RavenLite storage directory (no 'headers' file).");
        return StorageEnvironment.Open(new StorageOptions { Directory = dir.FullName, BackgroundFlush = false });
    }

    private static int Guard(TextWriter output, Func<int> body)
    {
        try
        {
            return body();
        }
        catch (Exception e) when (e is StorageCorruptionException or StorageEncryptionException or DirectoryNotFoundException or IOException)
        {
            output.WriteLine($"error: {e.Message}"); // an encrypted environment: "... opens only with its encryption key"
            return 2;
        }
    }

    public static int Check(DirectoryInfo dir, TextWriter output) => Guard(output, () =>
    {
        using var env = Open(dir);
        if (env.RecoveredTransactions > 0)
            output.WriteLine($"recovery replayed {env.RecoveredTransactions} journal record(s)");
        var report = StorageChecker.Check(env);
        output.WriteLine(report.ToString());
        return report.IsValid ? 0 : 1;
    });

    public static int Stats(DirectoryInfo dir, TextWriter output) => Guard(output, () =>
    {
        using var env = Open(dir);
        var s = env.GetStats();
        var c = CultureInfo.InvariantCulture;
        output.WriteLine(string.Create(c, $"data file        {s.DataFileBytes:N0} bytes, {s.PagesInUse:N0} pages in use or free"));
        output.WriteLine(string.Create(c, $"pages            {s.UsedPages:N0} used, {s.FreePages:N0} free, {s.ReusePendingPages:N0} pending reuse, {s.PagesWaitingForFlush:N0} waiting for flush"));
        output.WriteLine(string.Create(c, $"undo file        {s.UndoFileBytes:N0} bytes"));
        output.WriteLine(string.Create(c, $"transactions     last committed {s.LastCommittedTxId}, last synced {s.LastSyncedTxId}"));
        output.WriteLine(string.Create(c, $"recovery         {env.RecoveredTransactions} journal record(s) replayed at open"));
        output.WriteLine(string.Create(c, $"{"tree",-32} {"depth",5} {"entries",12} {"branch",8} {"leaf",8} {"overflow",9}"));
        foreach (var t in s.Trees.Prepend(s.RootTree))
            output.WriteLine(string.Create(c, $"{t.Name,-32} {t.Depth,5} {t.Entries,12:N0} {t.BranchPages,8:N0} {t.LeafPages,8:N0} {t.OverflowPages,9:N0}"));
        return 0;
    });

    public static int DumpTree(DirectoryInfo dir, string tree, int limit, TextWriter output) => Guard(output, () =>
    {
        using var env = Open(dir);
        using var tx = env.ReadTransaction();
        var t = tx.ReadTree(tree);
        if (t == null)
        {
            output.WriteLine($"error: no tree named '{tree}'. Trees: {string.Join(", ", tx.GetTreeNames())}");
            return 1;
        }
        var cursor = t.CreateCursor();
        int n = 0;
        if (cursor.SeekToFirst())
        {
            do
            {
                output.WriteLine($"{Show(cursor.Key)} => {Show(cursor.Value)}");
            }
            while (++n < limit && cursor.MoveNext());
        }
        output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"({n} of {t.Count} entries shown)"));
        return 0;
    });

    /// <summary>Printable UTF-8 as a quoted string, anything else as hex; long values are cut at 64 bytes.</summary>
    internal static string Show(ReadOnlySpan<byte> bytes)
    {
        var shown = bytes.Length > 64 ? bytes[..64] : bytes;
        string suffix = bytes.Length > 64 ? $"… ({bytes.Length} bytes)" : "";
        try
        {
            string s = new UTF8Encoding(false, true).GetString(shown);
            if (s.All(ch => !char.IsControl(ch)))
                return "\"" + s + "\"" + suffix;
        }
        catch (DecoderFallbackException)
        {
        }
        return "0x" + Convert.ToHexString(shown) + suffix;
    }

    public static int Snapshot(DirectoryInfo dir, FileInfo file, TextWriter output) => Guard(output, () =>
    {
        using var env = Open(dir);
        using var tx = env.ReadTransaction();
        using var stream = new FileStream(file.FullName, FileMode.CreateNew, FileAccess.Write);
        long lastPercent = -1;
        var result = Storage.Backup.StorageSnapshot.Write(tx, stream, null, (done, total) =>
        {
            long percent = total == 0 ? 100 : done * 100 / total;
            if (percent / 10 != lastPercent / 10)
                output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"snapshot: {done:N0} of {total:N0} pages ({percent}%)"));
            lastPercent = percent;
        });
        stream.Flush(flushToDisk: true);
        output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"snapshot of transaction {result.TxId}: {result.WrittenPages:N0} pages, {stream.Length:N0} bytes in '{file.FullName}'"));
        return 0;
    });

    public static int Restore(DirectoryInfo target, FileInfo[] files, TextWriter output) => Guard(output, () =>
    {
        try
        {
            using (var restorer = new Storage.Backup.SnapshotRestorer(target.FullName))
            {
                foreach (var f in files)
                {
                    using var stream = f.OpenRead();
                    restorer.Apply(stream, f.Name);
                    output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"restore: applied '{f.Name}' (transaction {restorer.TxId}, {restorer.PagesWritten:N0} pages so far)"));
                }
                restorer.Complete();
            }
        }
        catch (Exception e) when (e is InvalidDataException or InvalidOperationException)
        {
            output.WriteLine($"error: {e.Message}");
            return 2;
        }
        return Check(target, output);
    });

    public static int Compact(DirectoryInfo dir, DirectoryInfo target, TextWriter output) => Guard(output, () =>
    {
        if (!File.Exists(Path.Combine(dir.FullName, "headers")))
            throw new DirectoryNotFoundException($"'{dir.FullName}' is not a RavenLite storage directory (no 'headers' file).");
        if (target.Exists && target.EnumerateFileSystemInfos().Any())
            throw new IOException($"'{target.FullName}' is not empty.");
        var (before, after) = Storage.Backup.StorageCompactor.Compact(dir.FullName, target.FullName,
            (tree, copied) => output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"compact: {tree}: {copied:N0} entries")));
        output.WriteLine(string.Create(CultureInfo.InvariantCulture, $"compacted: data file {before:N0} -> {after:N0} bytes"));
        return Check(target, output);
    });
}
