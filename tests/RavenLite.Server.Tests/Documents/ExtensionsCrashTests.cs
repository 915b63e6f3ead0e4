using System.Collections.Concurrent;
using System.Globalization;
using System.Security.Cryptography;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Documents;

/// <summary>
/// docs/reliability.md R1 for the document extensions: the server process is SIGKILLed while clients increment counters,
/// append time-series entries, store attachments (small and multi-chunk) and write compare-exchange values; after a
/// restart every acknowledged increment, entry, attachment (byte for byte) and value is there, and no unfinished upload
/// is left behind. Rounds: RAVENLITE_CRASH_ROUNDS (CI default 3).
/// </summary>
public sealed class ExtensionsCrashTests(ITestOutputHelper output)
{
    private sealed class Acked
    {
        public readonly ConcurrentDictionary<string, long> Counters = new();   // document → acknowledged increments (each +1)
        public readonly ConcurrentDictionary<string, long> Sent = new();       // document → increments sent
        public readonly ConcurrentDictionary<long, bool> Entries = new();      // time-series entry times (ms since the Unix epoch)
        public readonly ConcurrentDictionary<string, string> Attachments = new(); // name → SHA-256 (base64)
        public readonly ConcurrentDictionary<string, long> Values = new();     // compare-exchange key → its acknowledged index
    }

    [Fact]
    public async Task Sigkill_during_extension_writes_loses_nothing_acknowledged()
    {
        int rounds = int.Parse(Environment.GetEnvironmentVariable("RAVENLITE_CRASH_ROUNDS") ?? "3", CultureInfo.InvariantCulture);
        using var dir = new TempDirectory("ravenlite-ext-crash");
        var acked = new Acked();
        int seed = TestSeed.For(2525)[^1];
        var rnd = new Random(seed);
        output.WriteLine($"seed {seed}, {rounds} rounds");
        for (int round = 0; round < rounds; round++)
        {
            using var server = await ServerProcess.StartAsync(dir.Path);
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
            if (round == 0)
            {
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/admin/databases?name=crash", Json(""))).StatusCode);
                foreach (string id in new[] { "c/0", "c/1", "c/2", "c/3", "ts/1", "files/1" })
                    Assert.Equal(HttpStatusCode.Created, (await http.PutAsync($"/databases/crash/docs?id={id}", Json("""{"@metadata":{"@collection":"Crash"}}"""))).StatusCode);
            }
            else
            {
                await AuditAsync(http, acked, round);
            }
            using var stop = new CancellationTokenSource();
            var workers = new List<Task>
            {
                Task.Run(() => CountersAsync(http, acked, stop.Token)),
                Task.Run(() => CountersAsync(http, acked, stop.Token)),
                Task.Run(() => TimeSeriesAsync(http, acked, round, stop.Token)),
                Task.Run(() => AttachmentsAsync(http, acked, round, new Random(seed + round), stop.Token)),
                Task.Run(() => CompareExchangeAsync(http, acked, round, stop.Token)),
            };
            await Task.Delay(rnd.Next(400, 1500));
            server.Kill();
            await stop.CancelAsync();
            await Task.WhenAll(workers);
        }
        using (var last = await ServerProcess.StartAsync(dir.Path))
        {
            using var http = new HttpClient { BaseAddress = last.Url, Timeout = TimeSpan.FromSeconds(30) };
            await AuditAsync(http, acked, rounds);
            var layout = await ReadJson(await http.GetAsync("/studio-api/storage?database=crash"));
            long staged = layout.GetProperty("Trees").EnumerateArray().Where(t => t.GetProperty("Name").GetString() == "AttachmentUploads").Sum(t => t.GetProperty("Entries").GetInt64());
            Assert.Equal(0, staged); // uploads cut short were swept when the database opened
        }
        output.WriteLine($"acknowledged: {acked.Counters.Values.Sum()} increments, {acked.Entries.Count} entries, {acked.Attachments.Count} attachments, {acked.Values.Count} values");
        Assert.True(acked.Counters.Values.Sum() > 0 && !acked.Entries.IsEmpty && !acked.Attachments.IsEmpty, "the workload acknowledged too little before the kills");
    }

    private async Task AuditAsync(HttpClient http, Acked acked, int round)
    {
        Assert.Equal(HttpStatusCode.OK, (await http.GetAsync("/databases/crash/stats")).StatusCode);
        foreach (var (doc, count) in acked.Counters)
        {
            var c = (await ReadJson(await http.GetAsync($"/databases/crash/counters?docId={doc}&counter=n"))).GetProperty("Counters");
            long value = c.GetArrayLength() > 0 && c[0].ValueKind == JsonValueKind.Object ? c[0].GetProperty("TotalValue").GetInt64() : 0;
            // Every acknowledged increment is there; unacknowledged ones may be too, never more than were sent.
            Assert.True(value >= count && value <= acked.Sent[doc], $"round {round}: {doc} counter {value}, acknowledged {count}, sent {acked.Sent[doc]}");
        }
        // A series with no entry yet answers 404 with no body (as RavenDB does): a kill before the first append (a slow
        // CI run saw it) leaves none, and then no entry may have been acknowledged either.
        var series = await http.GetAsync("/databases/crash/timeseries?docId=ts/1&name=v");
        var entries = series.StatusCode == HttpStatusCode.NotFound ? default : await ReadJson(series);
        var stored = entries.ValueKind == JsonValueKind.Object
            ? entries.GetProperty("Entries").EnumerateArray().Select(e => DateTimeOffset.Parse(e.GetProperty("Timestamp").GetString()!, CultureInfo.InvariantCulture).ToUnixTimeMilliseconds()).ToHashSet()
            : [];
        foreach (long t in acked.Entries.Keys)
            Assert.True(stored.Contains(t), $"round {round}: acknowledged time-series entry {t} is missing");
        foreach (var (name, hash) in acked.Attachments)
        {
            var r = await http.GetAsync($"/databases/crash/attachments?id=files/1&name={name}");
            Assert.True(r.StatusCode == HttpStatusCode.OK, $"round {round}: acknowledged attachment {name} is missing ({(int)r.StatusCode})");
            Assert.Equal(hash, Convert.ToBase64String(SHA256.HashData(await r.Content.ReadAsByteArrayAsync())));
        }
        foreach (var (key, index) in acked.Values)
        {
            var v = (await ReadJson(await http.GetAsync($"/databases/crash/cmpxchg?key={key}"))).GetProperty("Results");
            Assert.True(v.GetArrayLength() == 1 && v[0].GetProperty("Index").GetInt64() >= index, $"round {round}: compare-exchange {key} lost its acknowledged write");
        }
        output.WriteLine($"round {round}: audit passed");
    }

    private static async Task CountersAsync(HttpClient http, Acked acked, CancellationToken stop)
    {
        for (int i = 0; !stop.IsCancellationRequested; i++)
        {
            string doc = "c/" + (i % 4).ToString(CultureInfo.InvariantCulture);
            acked.Sent.AddOrUpdate(doc, 1, (_, v) => v + 1);
            try
            {
                var r = await http.PostAsync("/databases/crash/counters",
                    Json($$"""{"Documents":[{"DocumentId":"{{doc}}","Operations":[{"Type":"Increment","CounterName":"n","Delta":1}]}]}"""), stop);
                if (r.StatusCode == HttpStatusCode.OK)
                    acked.Counters.AddOrUpdate(doc, 1, (_, v) => v + 1);
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return;
            }
        }
    }

    private static async Task TimeSeriesAsync(HttpClient http, Acked acked, int round, CancellationToken stop)
    {
        long baseMs = new DateTimeOffset(2026, 1, 1, 0, 0, 0, TimeSpan.Zero).ToUnixTimeMilliseconds() + round * 100_000_000L;
        for (int batch = 0; !stop.IsCancellationRequested; batch++)
        {
            var times = Enumerable.Range(0, 50).Select(i => baseMs + (batch * 50 + i) * 1000L).ToList();
            string appends = string.Join(",", times.Select(t => $$"""{"Timestamp":"{{DateTimeOffset.FromUnixTimeMilliseconds(t).UtcDateTime:o}}","Values":[{{t % 97}}]}"""));
            try
            {
                var r = await http.PostAsync("/databases/crash/timeseries?docId=ts/1", Json($$"""{"Name":"v","Appends":[{{appends}}]}"""), stop);
                if (r.StatusCode == HttpStatusCode.NoContent)
                    foreach (long t in times)
                        acked.Entries[t] = true;
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return;
            }
        }
    }

    private static async Task AttachmentsAsync(HttpClient http, Acked acked, int round, Random rnd, CancellationToken stop)
    {
        for (int i = 0; !stop.IsCancellationRequested; i++)
        {
            var content = new byte[i % 5 == 4 ? 9 * 1024 * 1024 : rnd.Next(1, 200_000)]; // every fifth is staged in chunks
            rnd.NextBytes(content);
            string name = $"a-{round}-{i}";
            try
            {
                var r = await http.PutAsync($"/databases/crash/attachments?id=files/1&name={name}", new ByteArrayContent(content), stop);
                if (r.StatusCode == HttpStatusCode.Created)
                    acked.Attachments[name] = Convert.ToBase64String(SHA256.HashData(content));
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return;
            }
        }
    }

    private static async Task CompareExchangeAsync(HttpClient http, Acked acked, int round, CancellationToken stop)
    {
        for (int i = 0; !stop.IsCancellationRequested; i++)
        {
            string key = $"k/{round}/{i % 20}";
            long index = acked.Values.GetValueOrDefault(key);
            try
            {
                var r = await http.PutAsync($"/databases/crash/cmpxchg?key={key}&index={index}", Json($$"""{"Object":{{i}}}"""), stop);
                var answer = r.StatusCode == HttpStatusCode.OK ? await ReadJson(r) : default;
                if (answer.ValueKind == JsonValueKind.Object && answer.GetProperty("Successful").GetBoolean())
                    acked.Values[key] = answer.GetProperty("Index").GetInt64();
            }
            catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
            {
                return;
            }
        }
    }
}
