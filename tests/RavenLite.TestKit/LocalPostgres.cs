using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;

namespace RavenLite.TestKit;

/// <summary>
/// A throwaway PostgreSQL (Debian's package) for tests and benchmarks: initdb in a folder of its own, started on a
/// free loopback port with its defaults (fsync on, synchronous_commit on), stopped and deleted on dispose. It can be
/// stopped and started again on the same port and data (an outage). Running as root, the server runs as the
/// <c>postgres</c> user (it refuses root).
/// </summary>
public sealed class LocalPostgres : IDisposable
{
    private readonly string _dir;
    private readonly string _bin;
    private readonly bool _asPostgresUser;

    private LocalPostgres(string dir, string bin, bool asPostgresUser, int port)
    {
        _dir = dir;
        _bin = bin;
        _asPostgresUser = asPostgresUser;
        Port = port;
    }

    public int Port { get; }

    /// <summary>An Npgsql connection string to its <c>postgres</c> database.</summary>
    public string ConnectionString => $"Host=127.0.0.1;Port={Port.ToString(CultureInfo.InvariantCulture)};Username=postgres;Database=postgres;Pooling=true;Maximum Pool Size=200;Timeout=30;Command Timeout=600";

    /// <summary>What <c>postgres --version</c> printed.</summary>
    public string Version { get; private set; } = "";

    /// <summary>The folder its files (data, log, socket) live in.</summary>
    public string Directory => _dir;

    /// <summary>True when the Debian package is installed; <paramref name="bin"/> its tools' folder, <paramref name="why"/> what to install otherwise.</summary>
    public static bool IsAvailable(out string bin, out string why)
    {
        bin = System.IO.Directory.Exists("/usr/lib/postgresql")
            ? System.IO.Directory.GetDirectories("/usr/lib/postgresql").Select(d => Path.Combine(d, "bin")).Where(d => File.Exists(Path.Combine(d, "initdb"))).OrderDescending().FirstOrDefault() ?? ""
            : "";
        why = bin.Length > 0 ? "" : "PostgreSQL is not installed: sudo apt-get install -y postgresql (./test.sh installs it).";
        return bin.Length > 0;
    }

    /// <summary>Creates and starts one in <c>{workDir}/postgres</c>.</summary>
    public static LocalPostgres Start(string workDir)
    {
        if (!IsAvailable(out string bin, out string why))
            throw new InvalidOperationException(why);
        string dir = Path.Combine(workDir, "postgres");
        System.IO.Directory.CreateDirectory(dir);
        bool root = Environment.UserName == "root";
        var pg = new LocalPostgres(dir, bin, root, FreePort());
        if (root)
            Run("chown", ["-R", "postgres:postgres", dir], asPostgres: false);
        pg.Tool("initdb", ["-D", Path.Combine(dir, "data"), "-U", "postgres", "-A", "trust", "--no-locale", "-E", "UTF8"]);
        pg.Resume();
        pg.Version = Run(Path.Combine(bin, "postgres"), ["--version"], asPostgres: false).Trim();
        return pg;
    }

    /// <summary>Starts the server (again) on its port and data; returns once it accepts connections.</summary>
    public void Resume() =>
        Tool("pg_ctl", ["-D", Path.Combine(_dir, "data"), "-l", Path.Combine(_dir, "log"), "-w", "-t", "60", "-o",
            $"-p {Port.ToString(CultureInfo.InvariantCulture)} -k {_dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=512MB", "start"]);

    /// <summary>Stops the server (fast shutdown: open connections are dropped); its data stays.</summary>
    public void Stop() => Tool("pg_ctl", ["-D", Path.Combine(_dir, "data"), "-m", "fast", "-w", "stop"]);

    /// <summary>Runs <paramref name="sql"/> (statements separated by <c>;</c>).</summary>
    public void Execute(string sql)
    {
        using var connection = new Npgsql.NpgsqlConnection(ConnectionString + ";Pooling=false"); // no pooled connection outlives a Stop
        connection.Open();
        using var command = new Npgsql.NpgsqlCommand(sql, connection);
        command.ExecuteNonQuery();
    }

    /// <summary>The rows of <paramref name="sql"/>, each as its columns' text joined by <c>|</c> (NULL as <c>∅</c>), sorted: a multiset to compare.</summary>
    public List<string> Rows(string sql)
    {
        using var connection = new Npgsql.NpgsqlConnection(ConnectionString + ";Pooling=false"); // no pooled connection outlives a Stop
        connection.Open();
        using var command = new Npgsql.NpgsqlCommand(sql, connection);
        using var reader = command.ExecuteReader();
        var rows = new List<string>();
        while (reader.Read())
            rows.Add(string.Join('|', Enumerable.Range(0, reader.FieldCount).Select(i => reader.IsDBNull(i) ? "∅" : Convert.ToString(reader.GetValue(i), CultureInfo.InvariantCulture))));
        rows.Sort(StringComparer.Ordinal);
        return rows;
    }

    /// <summary>Runs one of PostgreSQL's tools (as the server's user); what it printed.</summary>
    public string Tool(string tool, string[] args) => Run(Path.Combine(_bin, tool), args, _asPostgresUser);

    private static int FreePort()
    {
        using var l = new TcpListener(IPAddress.Loopback, 0);
        l.Start();
        return ((IPEndPoint)l.LocalEndpoint).Port;
    }

    private static string Run(string file, string[] args, bool asPostgres)
    {
        var psi = asPostgres ? new ProcessStartInfo("runuser") : new ProcessStartInfo(file);
        if (asPostgres)
            foreach (string a in new[] { "-u", "postgres", "--", file })
                psi.ArgumentList.Add(a);
        foreach (string a in args)
            psi.ArgumentList.Add(a);
        psi.RedirectStandardOutput = true;
        psi.RedirectStandardError = true;
        using var p = Process.Start(psi)!;
        var err = p.StandardError.ReadToEndAsync();
        string output = p.StandardOutput.ReadToEnd();
        if (!p.WaitForExit(120_000) || p.ExitCode != 0)
            throw new InvalidOperationException($"{file} {string.Join(' ', args)} failed ({(p.HasExited ? p.ExitCode : -1)}): {err.Result}{output}");
        return output;
    }

    public void Dispose()
    {
        try
        {
            Stop();
        }
        catch (InvalidOperationException e)
        {
            Console.Error.WriteLine("warning: stopping PostgreSQL: " + e.Message);
        }
        System.IO.Directory.Delete(_dir, recursive: true);
    }
}
