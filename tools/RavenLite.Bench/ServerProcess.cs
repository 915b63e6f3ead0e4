using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using System.Text.RegularExpressions;

namespace RavenLite.Bench;

/// <summary>The RavenLite server as a child process (its own RSS), on 127.0.0.1, port 0, over a fresh data dir.</summary>
internal sealed partial class ServerProcess : IDisposable
{
    private readonly Process _process;

    private ServerProcess(Process process, Uri url)
    {
        _process = process;
        Url = url;
    }

    public Uri Url { get; }

    public static ServerProcess Start(string dataDir)
    {
        string dll = Path.Combine(AppContext.BaseDirectory, "RavenLite.Server.dll");
        var psi = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (string a in new[] { dll, "--DataDir", dataDir, "--ServerUrl", "http://127.0.0.1:0", "--Logging:LogLevel:Default", "Warning", "--Logging:LogLevel:RavenLite.Server.Hosting.ServerOptions", "Information" })
            psi.ArgumentList.Add(a);
        var p = Process.Start(psi)!;
        var url = new TaskCompletionSource<Uri>();
        p.OutputDataReceived += (_, e) =>
        {
            if (e.Data != null && Listening().Match(e.Data) is { Success: true } m)
                url.TrySetResult(new Uri(m.Groups[1].Value));
        };
        p.ErrorDataReceived += (_, e) =>
        {
            if (e.Data != null)
                Console.Error.WriteLine("server: " + e.Data);
        };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        if (!url.Task.Wait(TimeSpan.FromSeconds(60)))
        {
            p.Kill(true);
            throw new TimeoutException("RavenLite server did not start in 60 s");
        }
        return new ServerProcess(p, url.Task.Result);
    }

    [GeneratedRegex(@"listening on (http://\S+)")]
    private static partial Regex Listening();

    /// <summary>Peak resident set size so far (VmHWM).</summary>
    public long PeakRssBytes()
    {
        foreach (string line in File.ReadLines($"/proc/{_process.Id}/status"))
            if (line.StartsWith("VmHWM:", StringComparison.Ordinal))
                return long.Parse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1], CultureInfo.InvariantCulture) * 1024;
        return 0;
    }

    /// <summary>CPU time the server process used so far (user + system, /proc/PID/stat, 100 Hz ticks).</summary>
    public double CpuSeconds()
    {
        string stat = File.ReadAllText($"/proc/{_process.Id}/stat");
        var fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
        // After the command name: field 3 is fields[0]; utime and stime are fields 14 and 15.
        return (long.Parse(fields[11], CultureInfo.InvariantCulture) + long.Parse(fields[12], CultureInfo.InvariantCulture)) / 100.0;
    }

    /// <summary>The merger and storage counters of a database (GET stats).</summary>
    public static async Task<(long Transactions, long Operations, long JournalBytes)> StatsAsync(HttpClient http, string db)
    {
        using var doc = JsonDocument.Parse(await http.GetStringAsync($"/databases/{db}/stats"));
        var m = doc.RootElement.GetProperty("Merger");
        if (doc.RootElement.TryGetProperty("Process", out var process))
            Console.WriteLine($"#   server process: {process}");
        return (m.GetProperty("Transactions").GetInt64(), m.GetProperty("Operations").GetInt64(), doc.RootElement.GetProperty("Storage").GetProperty("JournalBytesWritten").GetInt64());
    }

    public void Dispose()
    {
        if (!_process.HasExited)
        {
            _process.Kill(true);
            _process.WaitForExit(30_000);
        }
        _process.Dispose();
    }
}
