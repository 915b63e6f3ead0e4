using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// A throwaway PostgreSQL (Debian package) for the server suites: initdb in a temp dir, started on a
/// free loopback port with its defaults (fsync on, synchronous_commit on), stopped and deleted after.
/// When running as root the server runs as the <c>postgres</c> user (it refuses root).
/// </summary>
internal sealed class PostgresPeer : IDisposable
{
    private readonly string _dir;
    private readonly string _bin;
    private readonly bool _asPostgresUser;

    private PostgresPeer(string dir, string bin, bool asPostgresUser, int port)
    {
        _dir = dir;
        _bin = bin;
        _asPostgresUser = asPostgresUser;
        Port = port;
    }

    public int Port { get; }

    public string ConnectionString => $"Host=127.0.0.1;Port={Port};Username=postgres;Database=postgres;Pooling=true;Maximum Pool Size=200;Timeout=30;Command Timeout=600";

    public string Version { get; private set; } = "";

    public static bool IsAvailable(out string bin, out string why)
    {
        bin = Directory.Exists("/usr/lib/postgresql")
            ? Directory.GetDirectories("/usr/lib/postgresql").Select(d => Path.Combine(d, "bin")).Where(d => File.Exists(Path.Combine(d, "initdb"))).OrderDescending().FirstOrDefault() ?? ""
            : "";
        why = bin.Length > 0 ? "" : "PostgreSQL is not installed: sudo apt-get install -y postgresql (the server suites run it as the peer).";
        return bin.Length > 0;
    }

    /// <summary>Loads <paramref name="docs"/> into <c>docs(id, body)</c> with one <c>COPY ... FROM STDIN</c> (one transaction).</summary>
    public static void CopyOrders(NpgsqlDataSource ds, OrderDocuments docs)
    {
        using var conn = ds.OpenConnection();
        using var writer = conn.BeginTextImport("COPY docs(id, body) FROM STDIN");
        var chars = new char[64 << 10];
        for (int i = 0; i < docs.Count; i++)
        {
            writer.Write(OrderDocuments.Id(i));
            writer.Write('\t');
            int n = Encoding.UTF8.GetChars(docs.Document(i).Span, chars); // the generator emits no tab, newline or backslash
            writer.Write(chars, 0, n);
            writer.Write('\n');
        }
    }

    public static PostgresPeer Start(string workDir)
    {
        if (!IsAvailable(out string bin, out string why))
            throw new InvalidOperationException(why);
        string dir = Path.Combine(workDir, "postgres");
        Directory.CreateDirectory(dir);
        bool root = Environment.UserName == "root";
        int port = FreePort();
        var peer = new PostgresPeer(dir, bin, root, port);
        if (root)
            Run("chown", ["-R", "postgres:postgres", dir], asPostgres: false, bin);
        string data = Path.Combine(dir, "data");
        peer.Pg("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-locale", "-E", "UTF8"]);
        peer.Pg("pg_ctl", ["-D", data, "-l", Path.Combine(dir, "log"), "-w", "-t", "60", "-o", $"-p {port} -k {dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=512MB", "start"]);
        peer.Version = Run(Path.Combine(bin, "postgres"), ["--version"], asPostgres: false, bin).Trim();
        return peer;
    }

    private static int FreePort()
    {
        using var l = new TcpListener(IPAddress.Loopback, 0);
        l.Start();
        return ((IPEndPoint)l.LocalEndpoint).Port;
    }

    /// <summary>
    /// <c>pg_dump -Fc -Z 1</c> of the database into a file in the peer's folder (PostgreSQL's own logical backup, the
    /// analogue of a RavenDB dump); returns the file's path.
    /// </summary>
    public string Dump()
    {
        string file = Path.Combine(_dir, "dump.pgdump");
        Pg("pg_dump", ["-h", "127.0.0.1", "-p", Port.ToString(System.Globalization.CultureInfo.InvariantCulture), "-U", "postgres", "-Fc", "-Z", "1", "-f", file, "postgres"]);
        return file;
    }

    private string Pg(string tool, string[] args) => Run(Path.Combine(_bin, tool), args, _asPostgresUser, _bin);

    private static string Run(string file, string[] args, bool asPostgres, string bin)
    {
        var psi = asPostgres ? new ProcessStartInfo("runuser") : new ProcessStartInfo(file);
        if (asPostgres)
        {
            foreach (string a in new[] { "-u", "postgres", "--", file })
                psi.ArgumentList.Add(a);
        }
        foreach (string a in args)
            psi.ArgumentList.Add(a);
        psi.RedirectStandardOutput = true;
        psi.RedirectStandardError = true;
        using var p = Process.Start(psi)!;
        var err = p.StandardError.ReadToEndAsync();
        string output = p.StandardOutput.ReadToEnd();
        if (!p.WaitForExit(120_000) || p.ExitCode != 0)
            throw new InvalidOperationException($"{file} {string.Join(' ', args)} failed ({(p.HasExited ? p.ExitCode : -1)}): {err.Result}{output}");
        _ = bin;
        return output;
    }

    public void Dispose()
    {
        try
        {
            Pg("pg_ctl", ["-D", Path.Combine(_dir, "data"), "-m", "fast", "-w", "stop"]);
        }
        catch (InvalidOperationException e)
        {
            Console.Error.WriteLine("warning: stopping PostgreSQL: " + e.Message);
        }
        Directory.Delete(_dir, recursive: true);
    }
}
