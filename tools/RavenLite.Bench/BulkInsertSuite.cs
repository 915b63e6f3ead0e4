using System.Diagnostics;
using System.Net;
using System.Text;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// BENCHMARKS.md `bulk-insert`: 1,000,000 orders of ≈1 KB (100,000 with --quick) streamed through
/// RavenLite's bulk-insert endpoint (sync durability, one HTTP request), against PostgreSQL
/// <c>COPY docs(id, body jsonb) FROM STDIN</c> with synchronous_commit on, same documents, same run.
/// </summary>
internal sealed class BulkInsertSuite(bool quick, string workDir, bool withPeer = true)
{
    public IEnumerable<BenchResult> Run()
    {
        int count = quick ? 100_000 : 1_000_000;
        Console.WriteLine($"# generating {count:N0} documents");
        var docs = new OrderDocuments(count);
        Console.WriteLine($"# {docs.TotalBytes / 1048576.0:N0} MB of JSON, {docs.TotalBytes / (double)count:N0} bytes per document");
        yield return RavenLite(docs);
        if (withPeer)
            yield return Postgres(docs);
    }

    private BenchResult RavenLite(OrderDocuments docs)
    {
        string data = Path.Combine(workDir, "ravenlite-bulk");
        using var server = ServerProcess.Start(data);
        using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromMinutes(30) };
        Check(http.PutAsync("/admin/databases?name=bench", new StringContent("")).Result, HttpStatusCode.Created);
        double cpu0 = server.CpuSeconds();
        var sw = Stopwatch.StartNew();
        var r = http.PostAsync("/databases/bench/bulk_insert?id=1", new BulkContent(docs)).Result;
        sw.Stop();
        double serverCpu = server.CpuSeconds() - cpu0;
        Check(r, HttpStatusCode.Created);
        var (tx, ops, journal) = ServerProcess.StatsAsync(http, "bench").Result;
        long rss = server.PeakRssBytes();
        Console.WriteLine($"#   ravenlite: {ops:N0} documents in {tx:N0} transactions ({ops / (double)Math.Max(1, tx):N0} per tx), journal {journal / (double)docs.Count:N0} B/doc, {docs.TotalBytes / 1048576.0 / sw.Elapsed.TotalSeconds:N0} MB/s, peak RSS {rss >> 20} MB, server CPU {serverCpu:N1} s ({serverCpu * 1e6 / docs.Count:N0} µs/doc)");
        return new BenchResult("bulk-insert", "bulk-insert-1kb", "ravenlite", "sync", docs.Count, sw.Elapsed.TotalSeconds, docs.Count / sw.Elapsed.TotalSeconds,
            journal, null, null, null, tx, null, null, rss);
    }

    private BenchResult Postgres(OrderDocuments docs)
    {
        using var pg = PostgresPeer.Start(workDir);
        using var ds = NpgsqlDataSource.Create(pg.ConnectionString);
        using (var c = ds.CreateCommand("CREATE TABLE docs(id text PRIMARY KEY, body jsonb NOT NULL)"))
            c.ExecuteNonQuery();
        var sw = Stopwatch.StartNew();
        PostgresPeer.CopyOrders(ds, docs);
        sw.Stop();
        Console.WriteLine($"#   {pg.Version}: COPY of {docs.Count:N0} documents, {docs.TotalBytes / 1048576.0 / sw.Elapsed.TotalSeconds:N0} MB/s");
        return new BenchResult("bulk-insert", "bulk-insert-1kb", "postgres", "sync", docs.Count, sw.Elapsed.TotalSeconds, docs.Count / sw.Elapsed.TotalSeconds,
            null, null, null, null, 1, null, null, null);
    }

    private static void Check(HttpResponseMessage r, HttpStatusCode expected)
    {
        if (r.StatusCode != expected)
            throw new InvalidOperationException($"{r.RequestMessage?.Method} {r.RequestMessage?.RequestUri}: {(int)r.StatusCode} {r.Content.ReadAsStringAsync().Result}");
    }

    /// <summary>Streams the array item by item (chunked), as a client's bulk insert does.</summary>
    internal sealed class BulkContent(OrderDocuments docs) : ItemStreamContent(docs.Count, (i, buffer) =>
    {
        buffer.Write("{\"Id\":\""u8);
        buffer.Write(Encoding.UTF8.GetBytes(OrderDocuments.Id(i)));
        buffer.Write("\",\"Type\":\"PUT\",\"Document\":"u8);
        buffer.Write(docs.Document(i).Span);
        buffer.WriteByte((byte)'}');
    });
}

/// <summary>A bulk-insert body: <c>[</c>, <paramref name="count"/> items written by <paramref name="writeItem"/>, <c>]</c>, sent in 1 MiB pieces as they are made.</summary>
internal class ItemStreamContent(int count, Action<int, MemoryStream> writeItem) : HttpContent
{
    protected override async Task SerializeToStreamAsync(Stream stream, TransportContext? context)
    {
        var buffer = new MemoryStream(1 << 20);
        buffer.WriteByte((byte)'[');
        for (int i = 0; i < count; i++)
        {
            if (i > 0)
                buffer.WriteByte((byte)',');
            writeItem(i, buffer);
            if (buffer.Length >= 1 << 20)
            {
                await stream.WriteAsync(buffer.GetBuffer().AsMemory(0, (int)buffer.Length));
                buffer.SetLength(0);
            }
        }
        buffer.WriteByte((byte)']');
        await stream.WriteAsync(buffer.GetBuffer().AsMemory(0, (int)buffer.Length));
    }

    protected override bool TryComputeLength(out long length)
    {
        length = 0;
        return false;
    }
}
