using System.Collections.Concurrent;
using System.Globalization;
using RavenLite.Client;
using RavenLite.Client.Subscriptions;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Subscriptions;

/// <summary>
/// A data subscription delivers every document at least once and skips none, across SIGKILLs of the server and
/// restarts of the worker (the .NET client's worker against the real server process): writers add documents while a
/// worker consumes; each round the server is killed at a random moment (and once the worker is disposed and replaced
/// mid-round); at the end a worker drains the rest (CloseWhenNoDocsLeft) and every document in the database — which
/// includes every acknowledged write — was handed to a handler. Rounds: RAVENLITE_CRASH_ROUNDS (CI default 3).
/// </summary>
public sealed class SubscriptionCrashTests(ITestOutputHelper output)
{
    private sealed class Item
    {
        public int N { get; set; }
    }

    // Kept whole: one scenario (writers, a worker, SIGKILLs, restarts) whose audit needs every step's
    // acknowledgements.
    [Fact]
    public async Task Sigkill_and_worker_restarts_skip_no_document()
    {
        int rounds = int.Parse(Environment.GetEnvironmentVariable("RAVENLITE_CRASH_ROUNDS") ?? "3", CultureInfo.InvariantCulture);
        using var dir = new TempDirectory("ravenlite-sub-crash");
        var acknowledgedWrites = new ConcurrentDictionary<string, bool>(StringComparer.OrdinalIgnoreCase);
        var delivered = new ConcurrentDictionary<string, int>(StringComparer.OrdinalIgnoreCase);
        int seed = TestSeed.For(2626)[^1];
        var rnd = new Random(seed);
        int next = 0;
        output.WriteLine($"seed {seed}, {rounds} rounds");

        SubscriptionWorker<Item> StartWorker(DocumentStore store, bool drain = false)
        {
            var worker = store.Subscriptions.GetSubscriptionWorker<Item>(new SubscriptionWorkerOptions("crash")
            {
                MaxDocsPerBatch = 37,
                Strategy = "TakeOver",
                CloseWhenNoDocsLeft = drain,
                TimeToWaitBeforeConnectionRetry = TimeSpan.FromMilliseconds(100),
            });
            _ = worker.Run(batch =>
            {
                foreach (var item in batch.Items)
                    delivered.AddOrUpdate(item.Id, 1, (_, n) => n + 1);
            });
            return worker;
        }

        for (int round = 0; round < rounds; round++)
        {
            using var server = await ServerProcess.StartAsync(dir.Path);
            using var http = new HttpClient { BaseAddress = server.Url, Timeout = TimeSpan.FromSeconds(30) };
            if (round == 0)
            {
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/admin/databases?name=crash", Json(""))).StatusCode);
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/crash/docs?id=items/0", Json("""{"N":0,"@metadata":{"@collection":"Items"}}"""))).StatusCode);
                acknowledgedWrites["items/0"] = true;
                Assert.Equal(HttpStatusCode.Created, (await http.PutAsync("/databases/crash/subscriptions", Json("""{"Name":"crash","Query":"from Items"}"""))).StatusCode);
            }
            using var store = new DocumentStore { Urls = [server.Url.ToString()], Database = "crash" };
            store.Initialize();
            var worker = StartWorker(store);
            using var stop = new CancellationTokenSource();
            var writers = Enumerable.Range(0, 2).Select(_ => Task.Run(async () =>
            {
                while (!stop.IsCancellationRequested)
                {
                    string id = "items/" + Interlocked.Increment(ref next).ToString(CultureInfo.InvariantCulture);
                    try
                    {
                        var r = await http.PutAsync($"/databases/crash/docs?id={id}", Json("{\"N\":1,\"@metadata\":{\"@collection\":\"Items\"}}"), stop.Token);
                        if (r.StatusCode == HttpStatusCode.Created)
                            acknowledgedWrites[id] = true;
                    }
                    catch (Exception e) when (e is HttpRequestException or OperationCanceledException or IOException)
                    {
                        return; // the server is gone
                    }
                }
            })).ToList();
            await Task.Delay(rnd.Next(300, 800));
            if (round == 0)
            {
                // A worker restart in the middle: its unacknowledged batch goes to the next worker.
                await worker.DisposeAsync();
                worker = StartWorker(store);
                await Task.Delay(rnd.Next(200, 500));
            }
            server.Kill();
            await stop.CancelAsync();
            await Task.WhenAll(writers);
            await worker.DisposeAsync();
            output.WriteLine($"round {round}: {acknowledgedWrites.Count} acknowledged writes, {delivered.Count} delivered so far");
        }

        // Drain: a last worker reads until no documents are left.
        using (var server = await ServerProcess.StartAsync(dir.Path))
        using (var http = new HttpClient { BaseAddress = server.Url })
        {
            using var store = new DocumentStore { Urls = [server.Url.ToString()], Database = "crash" };
            store.Initialize();
            var drainer = store.Subscriptions.GetSubscriptionWorker<Item>(new SubscriptionWorkerOptions("crash") { MaxDocsPerBatch = 500, CloseWhenNoDocsLeft = true });
            var run = drainer.Run(batch =>
            {
                foreach (var item in batch.Items)
                    delivered.AddOrUpdate(item.Id, 1, (_, n) => n + 1);
            });
            Assert.True(await Task.WhenAny(run, Task.Delay(TimeSpan.FromSeconds(60))) == run, "the draining worker finished");
            await run;
            await drainer.DisposeAsync();
            var stored = (await ReadJson(await http.GetAsync("/databases/crash/docs?startsWith=items/&pageSize=1000000"))).GetProperty("Results")
                .EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();
            var missingWrites = acknowledgedWrites.Keys.Where(id => !stored.Contains(id, StringComparer.OrdinalIgnoreCase)).ToList();
            Assert.True(missingWrites.Count == 0, "acknowledged writes lost: " + string.Join(", ", missingWrites.Take(10)));
            var skipped = stored.Where(id => !delivered.ContainsKey(id)).ToList();
            Assert.True(skipped.Count == 0, $"{skipped.Count} of {stored.Count} documents never delivered: {string.Join(", ", skipped.Take(10))}");
            output.WriteLine($"{stored.Count} documents, all delivered; {delivered.Values.Count(n => n > 1)} delivered more than once (unacknowledged when a crash came)");
        }
    }
}
