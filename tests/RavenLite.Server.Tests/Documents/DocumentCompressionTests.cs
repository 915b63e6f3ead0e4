using System.Buffers.Binary;
using System.Globalization;
using RavenLite.Server.Documents;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Documents;

/// <summary>
/// Documents stored compressed with a per-collection Zstandard dictionary (docs/format/documents.md "Compression"):
/// every read path gives back the JSON that was written, across updates, extensions, queries and a restart, and a
/// dictionary whose transaction rolled back never gives its id to documents that are kept.
/// </summary>
public sealed class DocumentCompressionTests
{
    private static readonly string[] Cities = ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Ghent"];

    /// <summary>An order of about 1 KB from <paramref name="i"/> (deterministic), without metadata.</summary>
    private static JsonObject Order(int i)
    {
        var r = new Random(i);
        var lines = new JsonArray();
        for (int l = 0; l < 4; l++)
            lines.Add(new JsonObject { ["Product"] = $"products/{r.Next(1, 80)}-A", ["PricePerUnit"] = r.Next(100, 20000) / 100.0, ["Quantity"] = r.Next(1, 60), ["Discount"] = r.Next(0, 4) * 0.05 });
        return new JsonObject
        {
            ["Company"] = $"companies/{r.Next(1, 90)}-A",
            ["OrderedAt"] = new DateTime(2020, 1, 1, 0, 0, 0, DateTimeKind.Utc).AddMinutes(r.Next(0, 2_000_000)).ToString("O", CultureInfo.InvariantCulture),
            ["Freight"] = r.Next(100, 100000) / 100.0,
            ["ShipTo"] = new JsonObject { ["City"] = Cities[r.Next(Cities.Length)], ["Line1"] = $"{r.Next(1, 999)} Main Street", ["Unicode"] = "Ærø ✓ 東京" },
            ["Lines"] = lines,
            ["Notes"] = new string((char)('a' + r.Next(26)), r.Next(20, 200)),
        };
    }

    private static string OrderJson(int i)
    {
        var o = Order(i);
        o["@metadata"] = new JsonObject { ["@collection"] = "Orders" };
        return o.ToJsonString();
    }

    private static async Task PutOrdersAsync(HttpClient http, int from, int count)
    {
        var commands = string.Join(",", Enumerable.Range(from, count).Select(i => $$"""{"Type":"PUT","Id":"orders/{{i}}","ChangeVector":null,"Document":{{OrderJson(i)}}}"""));
        var r = await http.PostAsync("/databases/db/bulk_docs", Json($$"""{"Commands":[{{commands}}]}"""));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
    }

    private static async Task<JsonElement> CompressionStats(HttpClient http) =>
        (await ReadJson(await http.GetAsync("/databases/db/stats/detailed"))).GetProperty("DocumentCompression");

    /// <summary>The document as the server gives it, without its metadata, equals what was written.</summary>
    private static async Task AssertSameAsync(HttpClient http, int i, JsonObject? expected = null)
    {
        var results = (await ReadJson(await http.GetAsync($"/databases/db/docs?id=orders/{i}"))).GetProperty("Results");
        var got = JsonNode.Parse(results[0].GetRawText())!.AsObject();
        Assert.Equal($"orders/{i}", got["@metadata"]!["@id"]!.GetValue<string>());
        got.Remove("@metadata");
        expected ??= Order(i);
        Assert.True(JsonNode.DeepEquals(expected, got), $"orders/{i}: {got.ToJsonString()}\nexpected {expected.ToJsonString()}");
    }

    /// <summary>orders/201's two revisions kept: freight 30 then 20, the rest as written.</summary>
    private static async Task AssertRevisionsAsync(HttpClient http)
    {
        var revisions = (await ReadJson(await http.GetAsync("/databases/db/revisions?id=orders/201"))).GetProperty("Results");
        Assert.Equal(2, revisions.GetArrayLength());
        for (int k = 0; k < 2; k++)
        {
            var got = JsonNode.Parse(revisions[k].GetRawText())!.AsObject();
            Assert.Contains("Revision", got["@metadata"]!["@flags"]!.GetValue<string>(), StringComparison.Ordinal);
            got.Remove("@metadata");
            var expected = Order(201);
            expected["Freight"] = k == 0 ? 30.0 : 20.0;
            Assert.True(JsonNode.DeepEquals(expected, got), got.ToJsonString());
        }
    }

    [Fact]
    public async Task Documents_written_after_a_collection_gets_its_dictionary_are_compressed_and_read_back_unchanged_everywhere()
    {
        using var dir = new TempDirectory("ravenlite-compression");
        int written = 0;
        await using (var s = await StartWithDatabaseAsync(dataDir: dir.Path))
        {
            // Samples first (stored as JSON), then writes until the trained dictionary is stored (bounded).
            var deadline = DateTime.UtcNow.AddSeconds(60);
            while ((await CompressionStats(s.Http)).GetProperty("Dictionaries").GetInt32() == 0)
            {
                Assert.True(DateTime.UtcNow < deadline, "no dictionary within 60 s");
                await PutOrdersAsync(s.Http, written, 250);
                written += 250;
            }
            await PutOrdersAsync(s.Http, written, 1000);
            written += 1000;
            var stats = await CompressionStats(s.Http);
            long json = stats.GetProperty("JsonBytes").GetInt64(), stored = stats.GetProperty("CompressedBytes").GetInt64();
            Assert.True(stats.GetProperty("DocumentsWrittenCompressed").GetInt64() >= 1000, stats.ToString());
            Assert.True(stored < json / 3, $"compressed {stored} of {json} bytes");

            foreach (int i in Enumerable.Range(0, written).Where(i => i % 7 == 0 || i >= written - 50))
                await AssertSameAsync(s.Http, i);
            // Paging by collection and a query (an auto index mapped from the compressed records).
            var page = (await ReadJson(await s.Http.GetAsync($"/databases/db/collections/docs?name=Orders&start={written - 1000}&pageSize=1000"))).GetProperty("Results");
            Assert.Equal(1000, page.GetArrayLength());
            foreach (var d in page.EnumerateArray())
            {
                var got = JsonNode.Parse(d.GetRawText())!.AsObject();
                int i = int.Parse(got["@metadata"]!["@id"]!.GetValue<string>()["orders/".Length..], CultureInfo.InvariantCulture);
                got.Remove("@metadata");
                Assert.True(JsonNode.DeepEquals(Order(i), got), $"orders/{i} in the page");
            }
            int expensive = Enumerable.Range(0, written).Count(i => Order(i)["Freight"]!.GetValue<double>() > 500);
            var q = await ReadJson(await s.Http.PostAsync("/databases/db/queries?waitForNonStaleResultsTimeout=00:01:00",
                Json("""{"Query":"from Orders where Freight > 500","PageSize":0,"WaitForNonStaleResults":true}""")));
            Assert.Equal(expensive, q.GetProperty("TotalResults").GetInt32());

            // An update of a compressed document (the server reads its extras and dates back from it), and a counter on one.
            int last = written - 1;
            var changed = Order(last);
            changed["Freight"] = 1.5;
            changed["@metadata"] = new JsonObject { ["@collection"] = "Orders" };
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/databases/db/docs?id=orders/{last}", Json(changed.ToJsonString()))).StatusCode);
            changed.Remove("@metadata");
            await AssertSameAsync(s.Http, last, changed);
            Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/counters",
                Json("""{"Documents":[{"DocumentId":"orders/100","Operations":[{"Type":"Increment","CounterName":"Views","Delta":3}]}]}"""))).StatusCode);
            var withCounter = (await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=orders/100"))).GetProperty("Results")[0];
            Assert.Equal("HasCounters", withCounter.GetProperty("@metadata").GetProperty("@flags").GetString());
            await AssertSameAsync(s.Http, 100);
            changed["@metadata"] = new JsonObject { ["@collection"] = "Orders" };
            await File.WriteAllTextAsync(Path.Combine(dir.Path, "changed.json"), changed.ToJsonString());

            // Revisions are compressed too; trimming reads the ones it removes (for their attachments).
            Assert.Equal(HttpStatusCode.OK, (await s.Http.PostAsync("/databases/db/admin/revisions/config",
                Json("""{"Collections":{"Orders":{"Disabled":false,"MinimumRevisionsToKeep":2}}}"""))).StatusCode);
            long compressedBefore = (await CompressionStats(s.Http)).GetProperty("DocumentsWrittenCompressed").GetInt64();
            foreach (double freight in new[] { 10.0, 20.0, 30.0 })
            {
                var o = Order(201);
                o["Freight"] = freight;
                o["@metadata"] = new JsonObject { ["@collection"] = "Orders" };
                Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/docs?id=orders/201", Json(o.ToJsonString()))).StatusCode);
            }
            Assert.Equal(compressedBefore + 6, (await CompressionStats(s.Http)).GetProperty("DocumentsWrittenCompressed").GetInt64()); // 3 documents, 3 revisions
            await AssertRevisionsAsync(s.Http);
        }

        // A restart loads the dictionaries: old records read back, new writes compress with the same dictionary.
        await using (var again = await StartAsync(dir.Path))
        {
            foreach (int i in Enumerable.Range(0, written - 1).Where(i => i % 5 == 0))
                await AssertSameAsync(again.Http, i);
            var changed = JsonNode.Parse(await File.ReadAllTextAsync(Path.Combine(dir.Path, "changed.json")))!.AsObject();
            changed.Remove("@metadata");
            await AssertSameAsync(again.Http, written - 1, changed);
            await PutOrdersAsync(again.Http, written, 200);
            var stats = await CompressionStats(again.Http);
            Assert.Equal(1, stats.GetProperty("Dictionaries").GetInt32());
            Assert.Equal(400, stats.GetProperty("DocumentsWrittenCompressed").GetInt64()); // 200 documents and their revisions
            await AssertSameAsync(again.Http, written + 199);
            await AssertRevisionsAsync(again.Http);
            Assert.Equal(HttpStatusCode.NoContent, (await again.Http.DeleteAsync("/databases/db/docs?id=orders/7")).StatusCode);
            Assert.Equal(HttpStatusCode.NotFound, (await again.Http.GetAsync("/databases/db/docs?id=orders/7")).StatusCode);
        }
    }

    [Fact]
    public async Task A_dictionary_whose_transaction_rolled_back_never_lends_its_id_to_stored_documents()
    {
        using var h = StorageHarness.OnDisk();
        var docs = new DocumentsStorage(h.Env, 2048);

        void Write(int from, int count, bool commit)
        {
            using var tx = h.Env.WriteTransaction();
            var ctx = docs.BeginWrite(tx);
            for (int i = from; i < from + count; i++)
                ctx.Put($"orders/{i}", Encoding.UTF8.GetBytes(OrderJson(i)), null);
            if (!commit)
                return; // as the merger does when a command throws: no Complete, the transaction rolls back
            ctx.Complete();
            tx.Commit();
        }

        async Task TrainAsync(int from)
        {
            Write(from, 1000, commit: true); // the samples
            Assert.NotNull(docs.Compression.TrainingOf("Orders"));
            await docs.Compression.TrainingOf("Orders")!.WaitAsync(TimeSpan.FromSeconds(60));
        }

        await TrainAsync(0);
        Write(1000, 10, commit: false); // stores dictionary 1 and compresses with it, then rolls back
        Assert.Equal(10, docs.Compression.CompressedWrites);
        await TrainAsync(2000); // the same collection samples again
        Write(3000, 100, commit: true);

        using (var tx = h.Env.ReadTransaction())
        {
            var ids = new List<uint>();
            var c = tx.ReadTree(DocumentCompression.TreeName)!.CreateCursor();
            for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
                ids.Add(BinaryPrimitives.ReadUInt32BigEndian(c.Key));
            Assert.Equal([2u], ids);
            Assert.Null(docs.Get(tx, "orders/1000"));
        }

        // Reopened: the documents written with dictionary 2 read back; the ones before it were stored as JSON.
        var env = h.Restart();
        var reopened = new DocumentsStorage(env, 2048);
        using (var tx = env.ReadTransaction())
        {
            var tree = tx.ReadTree(DocumentsStorage.DocsTree)!;
            foreach (int i in new[] { 0, 999, 2000, 2999, 3000, 3099 })
            {
                Assert.True(tree.TryGet(Encoding.UTF8.GetBytes($"orders/{i}"), out var record));
                Assert.Equal(i >= 3000, DocumentCompression.IsCompressed(record[DocumentRecord.BodyOffset(record)..]));
                var doc = reopened.Get(tx, $"orders/{i}")!;
                var got = JsonNode.Parse(doc.Json)!.AsObject();
                got.Remove("@metadata");
                Assert.True(JsonNode.DeepEquals(Order(i), got), $"orders/{i}");
            }
        }
    }

    /// <summary>A document of another shape than <see cref="Order"/>: other names, other values.</summary>
    private static JsonObject Event(int i)
    {
        var r = new Random(i + 1_000_000);
        var o = new JsonObject { ["Kind"] = "sensor-" + r.Next(1, 9), ["At"] = r.NextInt64().ToString(CultureInfo.InvariantCulture) };
        for (int k = 0; k < 12; k++)
            o["Reading" + k.ToString(CultureInfo.InvariantCulture)] = Convert.ToHexString(BitConverter.GetBytes(r.NextInt64()))[..(6 + k % 10)];
        return o;
    }

    [Fact]
    public async Task A_collection_whose_documents_change_shape_gets_a_new_dictionary_and_keeps_reading_the_old_records()
    {
        using var h = StorageHarness.InMemory();
        var docs = new DocumentsStorage(h.Env, 2048);
        string Body(int i) => (i < 1000 || i >= 90_000 ? Order(i) : Event(i)).ToJsonString().Insert(1, "\"@metadata\":{\"@collection\":\"Orders\"},");
        void Write(int from, int count)
        {
            using var tx = h.Env.WriteTransaction();
            var ctx = docs.BeginWrite(tx);
            for (int i = from; i < from + count; i++)
                ctx.Put($"orders/{i}", Encoding.UTF8.GetBytes(Body(i)), null);
            ctx.Complete();
            tx.Commit();
        }
        List<uint> Dictionaries()
        {
            using var tx = h.Env.ReadTransaction();
            var ids = new List<uint>();
            var c = tx.ReadTree(DocumentCompression.TreeName)!.CreateCursor();
            for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
                ids.Add(BinaryPrimitives.ReadUInt32BigEndian(c.Key));
            return ids;
        }

        Write(0, 1000);
        await docs.Compression.TrainingOf("Orders")!.WaitAsync(TimeSpan.FromSeconds(60));
        // The other shape: compressed with the first dictionary, clearly worse than its samples; after a window of them
        // the collection samples again and a second dictionary is trained (bounded: 20,000 documents).
        int next = 1000;
        while (Dictionaries().Count < 2 && next < 21_000)
        {
            Write(next, 500);
            next += 500;
            if (docs.Compression.TrainingOf("Orders") is { } training)
                await training.WaitAsync(TimeSpan.FromSeconds(60));
        }
        Assert.Equal([1u, 2u], Dictionaries());
        Write(90_000, 10); // the first shape again, written with the second dictionary
        using var read = h.Env.ReadTransaction();
        foreach (int i in new[] { 0, 999, 1000, next - 1, 90_000, 90_009 })
        {
            var doc = docs.Get(read, $"orders/{i}")!;
            var got = JsonNode.Parse(doc.Json)!.AsObject();
            got.Remove("@metadata");
            Assert.True(JsonNode.DeepEquals(i < 1000 || i >= 90_000 ? Order(i) : Event(i), got), $"orders/{i}");
        }
    }

    [Fact]
    public void Samples_held_across_collections_stay_within_the_budget_and_training_waits_for_room()
    {
        using var h = StorageHarness.InMemory();
        var docs = new DocumentsStorage(h.Env, 2048);
        docs.Compression.SampleBudget = 256 << 10;
        void Write(string collection, int from, int count)
        {
            using var tx = h.Env.WriteTransaction();
            var ctx = docs.BeginWrite(tx);
            for (int i = from; i < from + count; i++)
                ctx.Put($"{collection}/{i}", Encoding.UTF8.GetBytes(Order(i).ToJsonString().Insert(1, $"\"@metadata\":{{\"@collection\":\"{collection}\"}},")), null);
            ctx.Complete();
            tx.Commit();
        }
        // Ten small collections (500 documents each, under the 1,000 a training needs) would hold ≈5 MB of samples.
        for (int c = 0; c < 10; c++)
            Write("Small" + c.ToString(CultureInfo.InvariantCulture), 0, 500);
        Assert.InRange(docs.Compression.HeldSampleBytes, 200 << 10, (256 << 10) + 16 * 1024);
        // A large collection finds no room: it samples nothing and trains nothing while the budget is spent.
        Write("Large", 0, 1500);
        Assert.Null(docs.Compression.TrainingOf("Large"));
        Assert.InRange(docs.Compression.HeldSampleBytes, 200 << 10, (256 << 10) + 16 * 1024);
        // With room again it samples and trains.
        docs.Compression.SampleBudget = 64 << 20;
        Write("Large", 1500, 1000);
        Assert.NotNull(docs.Compression.TrainingOf("Large"));
    }
}
