using System.Text;
using Npgsql;
using RavenLite.TestKit;

namespace RavenLite.Bench;

/// <summary>
/// The PostgreSQL peer of the server suites: a <see cref="LocalPostgres"/> (its defaults: fsync on,
/// synchronous_commit on), and the loads and dumps the suites measure it with.
/// </summary>
internal sealed class PostgresPeer : IDisposable
{
    private readonly LocalPostgres _pg;

    private PostgresPeer(LocalPostgres pg) => _pg = pg;

    public int Port => _pg.Port;

    public string ConnectionString => _pg.ConnectionString;

    public string Version => _pg.Version;

    public static bool IsAvailable(out string bin, out string why) => LocalPostgres.IsAvailable(out bin, out why);

    public static PostgresPeer Start(string workDir) => new(LocalPostgres.Start(workDir));

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

    /// <summary>
    /// <c>pg_dump -Fc -Z 1</c> of the database into a file in the peer's folder (PostgreSQL's own logical backup, the
    /// analogue of a RavenDB dump); returns the file's path.
    /// </summary>
    public string Dump()
    {
        string file = Path.Combine(_pg.Directory, "dump.pgdump");
        _pg.Tool("pg_dump", ["-h", "127.0.0.1", "-p", Port.ToString(System.Globalization.CultureInfo.InvariantCulture), "-U", "postgres", "-Fc", "-Z", "1", "-f", file, "postgres"]);
        return file;
    }

    public void Dispose() => _pg.Dispose();
}
