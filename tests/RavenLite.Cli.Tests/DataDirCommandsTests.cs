using RavenLite.Storage;
using RavenLite.TestKit;

namespace RavenLite.Cli.Tests;

public class DataDirCommandsTests
{
    private static TempDirectory Filled()
    {
        var dir = new TempDirectory("ravenlite-cli");
        using var env = StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path));
        using var tx = env.WriteTransaction();
        var t = tx.CreateTree("users");
        for (int i = 0; i < 300; i++)
            t.Put(System.Text.Encoding.UTF8.GetBytes($"users/{i:D4}"), System.Text.Encoding.UTF8.GetBytes($"{{\"n\":{i}}}"));
        tx.Commit();
        return dir;
    }

    [Fact]
    public void Check_stats_and_dump_on_a_real_directory()
    {
        using var dir = Filled();
        var output = new StringWriter();
        Assert.Equal(0, DataDirCommands.Check(new DirectoryInfo(dir.Path), output));
        Assert.StartsWith("OK: 2 trees, 301 entries", output.ToString(), StringComparison.Ordinal);

        output = new StringWriter();
        Assert.Equal(0, DataDirCommands.Stats(new DirectoryInfo(dir.Path), output));
        Assert.Matches(@"users\s+2\s+300", output.ToString());
        var pages = System.Text.RegularExpressions.Regex.Match(output.ToString(), @"data file\s+[\d,]+ bytes, ([\d,]+) pages in use or free\npages\s+([\d,]+) used, ([\d,]+) free, ([\d,]+) pending reuse, [\d,]+ waiting for flush");
        Assert.True(pages.Success, output.ToString());
        long N(int g) => long.Parse(pages.Groups[g].Value.Replace(",", "", StringComparison.Ordinal), System.Globalization.CultureInfo.InvariantCulture);
        Assert.Equal(N(1), N(2) + N(3) + N(4));
        Assert.True(N(2) >= 3, output.ToString()); // the root tree's and the users tree's pages

        output = new StringWriter();
        Assert.Equal(0, DataDirCommands.DumpTree(new DirectoryInfo(dir.Path), "users", 2, output));
        Assert.Equal("\"users/0000\" => \"{\"n\":0}\"\n\"users/0001\" => \"{\"n\":1}\"\n(2 of 300 entries shown)\n", output.ToString().Replace("\r", "", StringComparison.Ordinal));

        output = new StringWriter();
        Assert.Equal(1, DataDirCommands.DumpTree(new DirectoryInfo(dir.Path), "nope", 2, output));
        Assert.Contains("Trees: users", output.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Corrupt_or_missing_directories_give_a_clear_error()
    {
        var output = new StringWriter();
        Assert.Equal(2, DataDirCommands.Check(new DirectoryInfo("/tmp/does-not-exist-ravenlite"), output));
        Assert.Contains("not a RavenLite storage directory", output.ToString(), StringComparison.Ordinal);

        using var dir = Filled();
        string headers = Path.Combine(dir.Path, "headers");
        var bytes = File.ReadAllBytes(headers);
        bytes[20] ^= 0xFF;
        bytes[4096 + 20] ^= 0xFF;
        File.WriteAllBytes(headers, bytes);
        output = new StringWriter();
        Assert.Equal(2, DataDirCommands.Check(new DirectoryInfo(dir.Path), output));
        Assert.Contains("no valid copy", output.ToString(), StringComparison.Ordinal);

        // An encrypted environment: the CLI holds no key, and says that is why it does not open it.
        using var encrypted = new TempDirectory("ravenlite-cli-encrypted");
        using (var key = Storage.Encryption.EncryptionKey.FromBytes(System.Security.Cryptography.RandomNumberGenerator.GetBytes(32)))
        using (StorageEnvironment.Open(new StorageOptions { Directory = encrypted.Path, EncryptionKey = key }))
        {
        }
        output = new StringWriter();
        Assert.Equal(2, DataDirCommands.Check(new DirectoryInfo(encrypted.Path), output));
        Assert.Contains("opens only with its encryption key", output.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public void Snapshot_restore_and_compact_keep_every_entry_and_report_progress()
    {
        using var dir = Filled();
        using (var env = StorageEnvironment.Open(StorageOptions.ForDirectory(dir.Path)))
        {
            using var tx = env.WriteTransaction();
            var t = tx.CreateTree("users");
            for (int i = 0; i < 300; i += 2)
                t.Delete(System.Text.Encoding.UTF8.GetBytes($"users/{i:D4}"));
            tx.Commit();
        }
        using var work = new TempDirectory("ravenlite-cli-work");
        string file = Path.Combine(work.Path, "full.pages");
        var output = new StringWriter();
        Assert.Equal(0, DataDirCommands.Snapshot(new DirectoryInfo(dir.Path), new FileInfo(file), output));
        Assert.Contains("(100%)", output.ToString(), StringComparison.Ordinal);

        output = new StringWriter();
        Assert.Equal(0, DataDirCommands.Restore(new DirectoryInfo(Path.Combine(work.Path, "restored")), [new FileInfo(file)], output));
        Assert.Contains("OK: 2 trees, 151 entries", output.ToString(), StringComparison.Ordinal);

        output = new StringWriter();
        Assert.Equal(0, DataDirCommands.Compact(new DirectoryInfo(dir.Path), new DirectoryInfo(Path.Combine(work.Path, "compacted")), output));
        Assert.Contains("compact: users: 150 entries", output.ToString(), StringComparison.Ordinal);
        Assert.Contains("OK: 2 trees, 151 entries", output.ToString(), StringComparison.Ordinal);

        // A damaged stream is refused with the reason, exit code 2.
        var bytes = File.ReadAllBytes(file);
        bytes[bytes.Length / 2] ^= 1;
        File.WriteAllBytes(file, bytes);
        output = new StringWriter();
        Assert.Equal(2, DataDirCommands.Restore(new DirectoryInfo(Path.Combine(work.Path, "broken")), [new FileInfo(file)], output));
        Assert.Contains("checksum", output.ToString(), StringComparison.Ordinal);
    }
}
