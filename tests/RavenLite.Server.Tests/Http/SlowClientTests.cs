using System.Diagnostics;
using System.Net.Sockets;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Http;

/// <summary>
/// Slow and greedy clients: Kestrel's limits are set on purpose (<c>MaxConnections</c>,
/// <c>RequestHeadersTimeoutSeconds</c>, <c>MinDataRateBytesPerSecond</c>/<c>MinDataRateGraceSeconds</c>) and a client that
/// trickles its headers, or stops reading a large answer, is dropped while others are served. Small sizes here; the
/// long run is a tool.
/// </summary>
public sealed class SlowClientTests
{
    [Fact]
    public async Task Slowloris_connections_are_closed_after_the_header_deadline_while_normal_requests_are_answered()
    {
        await using var s = await StartWithDatabaseAsync("db", o => o.RequestHeadersTimeoutSeconds = 2);
        var slow = new List<TcpClient>();
        for (int i = 0; i < 100; i++)
        {
            var c = new TcpClient();
            await c.ConnectAsync(IPAddress.Loopback, s.Url.Port);
            await c.GetStream().WriteAsync(Encoding.ASCII.GetBytes("GET /databases/db/docs?id=x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "));
            slow.Add(c);
        }
        // Trickle one header byte a second on each, while a normal client is served.
        using var stop = new CancellationTokenSource();
        var trickle = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                foreach (var c in slow)
                {
                    try
                    {
                        await c.GetStream().WriteAsync("a"u8.ToArray());
                    }
                    catch (IOException)
                    {
                        // closed by the server: expected
                    }
                }
                await Task.Delay(1000);
            }
        });
        var sw = Stopwatch.StartNew();
        int served = 0;
        while (sw.Elapsed < TimeSpan.FromSeconds(4))
        {
            var r = await s.Http.PutAsync($"/databases/db/docs?id=normal/{served}", Json("{}"));
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
            served++;
        }
        Assert.True(served > 10, $"only {served} normal requests in 4 s");

        // Every slow connection has been closed by the server (its headers never completed within 2 s).
        var deadline = DateTime.UtcNow.AddSeconds(20);
        int closed = 0;
        foreach (var c in slow)
        {
            var buffer = new byte[512];
            try
            {
                var stream = c.GetStream();
                int n;
                do
                {
                    var left = deadline - DateTime.UtcNow;
                    n = await stream.ReadAsync(buffer).AsTask().WaitAsync(left > TimeSpan.Zero ? left : TimeSpan.FromMilliseconds(1));
                }
                while (n > 0); // Kestrel may answer 408 before closing
                closed++;
            }
            catch (IOException)
            {
                closed++; // reset by the server
            }
        }
        await stop.CancelAsync();
        await trickle;
        foreach (var c in slow)
            c.Dispose();
        Assert.Equal(100, closed);
    }

    [Fact]
    public async Task A_client_that_stops_reading_a_large_stream_is_dropped()
    {
        await using var s = await StartWithDatabaseAsync("db", o =>
        {
            o.StalledClientSeconds = 3;
        });
        string pad = new('x', 2000);
        var bulk = new StringBuilder();
        for (int i = 0; i < 20_000; i++)
            bulk.Append("{\"Id\":\"big/" + i + "\",\"Type\":\"PUT\",\"Document\":{\"Pad\":\"" + pad + "\",\"@metadata\":{\"@collection\":\"Bigs\"}}}").Append('\n');
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PostAsync("/databases/db/bulk_insert", new StringContent("[" + bulk.ToString().TrimEnd('\n').Replace("\n", ",", StringComparison.Ordinal) + "]"))).StatusCode);

        // ~40 MB of answer; read 64 KB, then stop reading.
        using var tcp = new TcpClient { ReceiveBufferSize = 64 << 10 };
        await tcp.ConnectAsync(IPAddress.Loopback, s.Url.Port);
        var stream = tcp.GetStream();
        await stream.WriteAsync(Encoding.ASCII.GetBytes("GET /databases/db/streams/docs?startsWith=big/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
        var buffer = new byte[64 << 10];
        long received = 0;
        while (received < 64 << 10)
            received += await stream.ReadAsync(buffer);
        await Task.Delay(TimeSpan.FromSeconds(10)); // the server's writes make no progress for longer than 3 s

        // Reading again drains what the kernel buffered, then the connection ends early: the server dropped it. (Connection:
        // close: had the whole answer been sent, the server would close after it.)
        try
        {
            int n;
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            while ((n = await stream.ReadAsync(buffer, cts.Token)) > 0)
                received += n;
        }
        catch (IOException)
        {
            // reset by the server
        }
        Assert.True(received < 20_000L * 2000, $"the whole answer arrived ({received} bytes): the stalled reader was not dropped");
        // And the server still answers.
        Assert.Equal(HttpStatusCode.OK, (await s.Http.GetAsync("/databases/db/docs?id=big/1")).StatusCode);
    }

    [Fact]
    public async Task A_silent_bulk_insert_stream_is_dropped_after_its_idle_time_and_a_slow_client_with_heartbeats_is_not()
    {
        await using var s = await StartWithDatabaseAsync("db", o => o.BulkInsertIdleSeconds = 3);

        // A raw stream: one document, then silence.
        using (var tcp = new TcpClient())
        {
            await tcp.ConnectAsync(IPAddress.Loopback, s.Url.Port);
            var stream = tcp.GetStream();
            string item = """[{"Id":"silent/1","Type":"PUT","Document":{"N":1}}""";
            await stream.WriteAsync(Encoding.ASCII.GetBytes($"POST /databases/db/bulk_insert?id=77 HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n{item.Length:x}\r\n{item}\r\n"));
            var sw = Stopwatch.StartNew();
            var buffer = new byte[4096];
            try
            {
                while (await stream.ReadAsync(buffer).AsTask().WaitAsync(TimeSpan.FromSeconds(30)) > 0)
                {
                }
            }
            catch (IOException)
            {
                // reset by the server
            }
            Assert.True(sw.Elapsed > TimeSpan.FromSeconds(2), $"closed after {sw.Elapsed.TotalSeconds:F1} s, before the idle time");
        }
        var state = await ReadJson(await s.Http.GetAsync("/databases/db/operations/state?id=77"));
        Assert.Equal("Faulted", state.GetProperty("Status").GetString());
        Assert.Contains("sent nothing for 3 s", state.GetRawText(), StringComparison.Ordinal);

        // The .NET client pausing longer than the idle time: its heartbeats keep the stream alive. (BufferBytes 1: the
        // first document is on the wire before the pause, so a dropped stream cannot be retried whole by HttpClient.)
        using var store = new Client.DocumentStore { Urls = [s.Url.ToString()], Database = "db" }.Initialize();
        await using (var bulk = store.BulkInsert(options: new Client.BulkInsert.BulkInsertOptions { BufferBytes = 1, HeartbeatInterval = TimeSpan.FromMilliseconds(500) }))
        {
            await bulk.StoreAsync(new { N = 1 }, "slow/1");
            await Task.Delay(TimeSpan.FromSeconds(7));
            await bulk.StoreAsync(new { N = 2 }, "slow/2");
        }
        Assert.Equal(HttpStatusCode.OK, (await s.Http.GetAsync("/databases/db/docs?id=slow/2")).StatusCode);
    }
}
