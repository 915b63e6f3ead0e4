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
    }
}
