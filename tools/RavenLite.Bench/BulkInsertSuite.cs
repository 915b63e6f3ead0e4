using System.Diagnostics;
using System.Net;
using System.Net.Http.Json;
using System.Text;
using Npgsql;

namespace RavenLite.Bench;

/// <summary>
/// docs/benchmarks.md `bulk-insert`: 1,000,000 orders of ≈1 KB (100,000 with --quick) streamed through
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
        foreach (var r in RavenLite(docs))
            yield return r;
        if (withPeer)
            yield return Postgres(docs);
    }

    private List<BenchResult> RavenLite(OrderDocuments docs)
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
        // Loads by id of the documents just written (random ids, 16 clients): each answer is read out of the snapshot
        // (decompressed when stored compressed) and checked for its id.
        var readers = new SocketsHttpHandler { MaxConnectionsPerServer = 64 };
        using var readHttp = new HttpClient(readers) { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(60) };
        double readCpu0 = server.CpuSeconds();
        var (loads, loadSeconds, p50, p99) = WritesSuite.Drive(16, TimeSpan.FromSeconds(quick ? 5 : 10), async (client, i) =>
        {
            int n = (int)((uint)HashCode.Combine(client, i) % (uint)docs.Count);
            string id = OrderDocuments.Id(n);
            var body = await readHttp.GetByteArrayAsync($"/databases/bench/docs?id={id}");
            if (body.AsSpan().IndexOf(Encoding.UTF8.GetBytes(id)) < 0)
                throw new InvalidOperationException($"GET {id} answered without its id");
        });
        double readCpu = server.CpuSeconds() - readCpu0;
        Console.WriteLine($"#   ravenlite loads by id, 16 clients: {loads / loadSeconds:N0}/s, p50 {p50:N2} ms, p99 {p99:N2} ms, server CPU {readCpu * 1e6 / Math.Max(1, loads):N0} µs per load");
        var detailed = http.GetFromJsonAsync<System.Text.Json.JsonElement>("/databases/bench/stats/detailed").Result;
        Console.WriteLine($"#   ravenlite: {ops:N0} documents in {tx:N0} transactions ({ops / (double)Math.Max(1, tx):N0} per tx), journal {journal / (double)docs.Count:N0} B/doc, {docs.TotalBytes / 1048576.0 / sw.Elapsed.TotalSeconds:N0} MB/s, peak RSS {rss >> 20} MB, server CPU {serverCpu:N1} s ({serverCpu * 1e6 / docs.Count:N0} µs/doc)");
        if (detailed.TryGetProperty("DocumentCompression", out var compression)) // a server build from before document compression has none
            Console.WriteLine($"#   compression: {compression.GetProperty("DocumentsWrittenCompressed").GetInt64():N0} documents compressed, {compression.GetProperty("CompressedBytes").GetInt64() / (double)Math.Max(1, compression.GetProperty("JsonBytes").GetInt64()):F3} of their stored JSON, {compression.GetProperty("Dictionaries").GetInt32()} dictionaries");
        // On disk after a clean stop (flushed; the journal's files and the undo file retired): every file of the database's storage.
        if (!server.Stop(TimeSpan.FromMinutes(5)))
            throw new InvalidOperationException("the server did not stop within 5 minutes");
        long onDisk = new DirectoryInfo(Path.Combine(data, "Databases", "bench", "storage")).EnumerateFiles("*", SearchOption.AllDirectories).Sum(f => f.Length);
        Console.WriteLine($"#   storage on disk after a clean stop: {onDisk / 1048576.0:N1} MB = {onDisk / (double)docs.TotalBytes:F3}× the documents' JSON ({docs.TotalBytes / 1048576.0:N1} MB)");
        return [new BenchResult("bulk-insert", "bulk-insert-1kb", "ravenlite", "sync", docs.Count, sw.Elapsed.TotalSeconds, docs.Count / sw.Elapsed.TotalSeconds,
            journal, null, null, onDisk, tx, null, null, rss),
            new BenchResult("bulk-insert", "load-by-id-16-clients", "ravenlite", "sync", loads, loadSeconds, loads / loadSeconds, null, null, null, null, null, p50, p99, null)];
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
        using (var c = ds.CreateCommand("SELECT pg_total_relation_size('docs')"))
        {
            long size = (long)c.ExecuteScalar()!;
            Console.WriteLine($"#   {pg.Version}: table docs with its TOAST and index {size / 1048576.0:N1} MB = {size / (double)docs.TotalBytes:F3}× the JSON");
        }
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
