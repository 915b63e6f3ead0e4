using Microsoft.Extensions.DependencyInjection;
using RavenLite.Server.Databases;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Batches;

public sealed class BulkDocsAndHiLoTests
{
    [Fact]
    public async Task Bulk_docs_puts_and_deletes_in_one_transaction_with_the_result_shapes_clients_read()
    {
        await using var s = await StartWithDatabaseAsync();
        await s.Http.PutAsync("/databases/db/docs?id=users/2-A", Json("""{"N":"old","@metadata":{"@collection":"Users"}}"""));
        var r = await s.Http.PostAsync("/databases/db/bulk_docs??&waitForIndexesTimeout=00:00:05&waitForIndexThrow=false", Json("""
            {"Commands":[
              {"Id":"users/1-A","ChangeVector":null,"Document":{"name":"Alice","@metadata":{"@collection":"Users","Raven-Python-Type":"__main__.User"}},"Type":"PUT"},
              {"Id":"users/2-A","ChangeVector":null,"Type":"DELETE","OriginalChangeVector":"A:1-x"}]}
            """));
        Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var results = (await ReadJson(r)).GetProperty("Results");
        Assert.Equal("PUT", results[0].GetProperty("Type").GetString());
        Assert.Equal("users/1-A", results[0].GetProperty("@id").GetString());
        Assert.StartsWith("A:", results[0].GetProperty("@change-vector").GetString());
        Assert.Equal("Users", results[0].GetProperty("@collection").GetString());
        Assert.Equal("DELETE", results[1].GetProperty("Type").GetString());
        Assert.Equal("users/2-A", results[1].GetProperty("Id").GetString());
        Assert.True(results[1].GetProperty("Deleted").GetBoolean());

        // Both commands share one storage transaction: the etags are consecutive.
        var db = s.Services.GetRequiredService<DatabaseRegistry>().Acquire("db");
        try
        {
            var stats = db.Merger.GetStats();
            Assert.Equal(3, stats.Operations); // 1 single PUT + the 2-command batch
            Assert.Equal(2, stats.Transactions);
        }
        finally
        {
            db.Release();
        }
    }

    [Fact]
    public async Task A_failed_change_vector_check_answers_409_and_applies_nothing_of_the_batch()
    {
        await using var s = await StartWithDatabaseAsync();
        await s.Http.PutAsync("/databases/db/docs?id=a", Json("""{"V":1}"""));
        var r = await s.Http.PostAsync("/databases/db/bulk_docs", Json("""
            {"Commands":[
              {"Id":"b","Document":{"V":2},"Type":"PUT"},
              {"Id":"a","ChangeVector":"","Document":{"V":3},"Type":"PUT"}]}
            """));
        Assert.Equal(HttpStatusCode.Conflict, r.StatusCode);
        Assert.Equal("Raven.Client.Exceptions.ConcurrencyException", (await ReadJson(r)).GetProperty("Type").GetString());
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=b")).StatusCode);
        var a = await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=a"));
        Assert.Equal(1, a.GetProperty("Results")[0].GetProperty("V").GetInt32());
    }

    [Fact]
    public async Task One_conflicting_request_among_concurrent_ones_fails_alone()
    {
        await using var s = await StartWithDatabaseAsync();
        await s.Http.PutAsync("/databases/db/docs?id=taken", Json("{}"));
        var tasks = Enumerable.Range(0, 40).Select(i => s.Http.PostAsync("/databases/db/bulk_docs", Json(i == 20
            ? """{"Commands":[{"Id":"taken","ChangeVector":"","Document":{},"Type":"PUT"}]}"""
            : $$$"""{"Commands":[{"Id":"c/{{{i}}}","Document":{"I":{{{i}}}},"Type":"PUT"}]}"""))).ToList();
        var answers = await Task.WhenAll(tasks);
        for (int i = 0; i < answers.Length; i++)
            Assert.Equal(i == 20 ? HttpStatusCode.Conflict : HttpStatusCode.Created, answers[i].StatusCode);
        var stats = await ReadJson(await s.Http.GetAsync("/databases/db/stats"));
        Assert.Equal(40, stats.GetProperty("CountOfDocuments").GetInt64());
    }

    [Theory]
    [InlineData("""{"Commands":[{"Id":"a","Type":"AttachmentPUT","Name":"x"}]}""", "has no content")]
    [InlineData("""{"Commands":[{"Id":"a","Type":"Revisions"}]}""", "does not support")]
    [InlineData("""{"Commands":[{"Id":"a","Type":"PATCH","Patch":{}}]}""", "needs {\"Script\"")]
    [InlineData("""{"Commands":[{"Id":"a","Type":"PUT"}]}""", "needs a Document")]
    [InlineData("""{"Commands":[{"Type":"DELETE"}]}""", "has no Id")]
    [InlineData("""{"Commands":[{"Id":"a","Type":"PUT","Document":[]}]}""", "needs a Document")]
    [InlineData("""{"Commands":{}}""", "Commands")]
    [InlineData("""{"Commands":[{"Id":"a","Type":"PUT","Document":{"@metadata":{"@collection":5}}}]}""", "@collection")]
    [InlineData("""{"Commands":[{"Id":"a","Type":"Counters","Counters":{"DocumentId":"a","Operations":[]}}],"TransactionMode":"ClusterWide"}""", "cluster-wide transaction cannot hold")]
    public async Task Unsupported_or_malformed_commands_are_400_naming_the_problem(string body, string expected)
    {
        await using var s = await StartWithDatabaseAsync();
        var r = await s.Http.PostAsync("/databases/db/bulk_docs", Json(body));
        Assert.Equal(HttpStatusCode.BadRequest, r.StatusCode);
        Assert.Contains(expected, (await ReadJson(r)).GetProperty("Message").GetString());
        Assert.Equal(0, (await ReadJson(await s.Http.GetAsync("/databases/db/stats"))).GetProperty("CountOfDocuments").GetInt64());
    }

    [Fact]
    public async Task HiLo_hands_out_disjoint_growing_ranges_and_return_gives_back_the_tail()
    {
        await using var s = await StartWithDatabaseAsync();
        var first = await ReadJson(await s.Http.GetAsync("/databases/db/hilo/next?tag=users&lastBatchSize=0&lastRangeAt=&identityPartsSeparator=/&lastMax=0"));
        Assert.Equal("users/", first.GetProperty("Prefix").GetString());
        Assert.Equal(1, first.GetProperty("Low").GetInt64());
        Assert.Equal(32, first.GetProperty("High").GetInt64());
        Assert.Equal("A", first.GetProperty("ServerTag").GetString());
        string at = first.GetProperty("LastRangeAt").GetString()!;
        Assert.Matches(@"\.\d{7}Z$", at);
        var second = await ReadJson(await s.Http.GetAsync($"/databases/db/hilo/next?lastBatchSize=32&tag=users&lastRangeAt={Uri.EscapeDataString(at)}&identityPartsSeparator=/&lastMax=32"));
        Assert.Equal(33, second.GetProperty("Low").GetInt64());
        Assert.Equal(64, second.GetProperty("LastSize").GetInt64()); // doubled: asked again within 30 s
        Assert.Equal(96, second.GetProperty("High").GetInt64());
        Assert.Equal(HttpStatusCode.NoContent, (await s.Http.PutAsync("/databases/db/hilo/return?tag=users&end=96&last=40", Json(""))).StatusCode);
        var third = await ReadJson(await s.Http.GetAsync("/databases/db/hilo/next?tag=users&lastBatchSize=0&lastRangeAt=&identityPartsSeparator=/&lastMax=0"));
        Assert.Equal(41, third.GetProperty("Low").GetInt64());

        // Concurrent callers never share a number.
        var ranges = await Task.WhenAll(Enumerable.Range(0, 20).Select(async _ =>
            await ReadJson(await s.Http.GetAsync("/databases/db/hilo/next?tag=orders&lastBatchSize=0&lastMax=0"))));
        var spans = ranges.Select(r => (Low: r.GetProperty("Low").GetInt64(), High: r.GetProperty("High").GetInt64())).OrderBy(r => r.Low).ToList();
        for (int i = 1; i < spans.Count; i++)
            Assert.True(spans[i].Low > spans[i - 1].High);
    }

    [Fact]
    public void HiLo_capacity_rule_doubles_when_recent_and_halves_when_old()
    {
        var now = new DateTime(2026, 1, 1, 12, 0, 0, DateTimeKind.Utc);
        Assert.Equal(32, Endpoints.HiLoEndpoints.NextCapacity(0, null, now));
        Assert.Equal(128, Endpoints.HiLoEndpoints.NextCapacity(64, now.AddSeconds(-5), now));
        Assert.Equal(64, Endpoints.HiLoEndpoints.NextCapacity(64, now.AddSeconds(-45), now));
        Assert.Equal(32, Endpoints.HiLoEndpoints.NextCapacity(64, now.AddMinutes(-5), now));
        Assert.Equal(1024 * 1024, Endpoints.HiLoEndpoints.NextCapacity(1024 * 1024, now, now));
    }

    [Fact]
    public async Task Concurrent_single_document_writes_are_merged_into_fewer_transactions()
    {
        await using var s = await StartWithDatabaseAsync();
        var tasks = Enumerable.Range(0, 200).Select(i => s.Http.PutAsync($"/databases/db/docs?id=m/{i}", Json($$$"""{"I":{{{i}}}}"""))).ToList();
        foreach (var r in await Task.WhenAll(tasks))
            Assert.Equal(HttpStatusCode.Created, r.StatusCode);
        var merger = (await ReadJson(await s.Http.GetAsync("/databases/db/stats"))).GetProperty("Merger");
        Assert.Equal(200, merger.GetProperty("Operations").GetInt64());
        Assert.True(merger.GetProperty("Transactions").GetInt64() <= 200);
        Assert.True(merger.GetProperty("AverageOperationsPerTransaction").GetDouble() >= 1);
        for (int i = 0; i < 200; i += 37)
            Assert.Equal(i, (await ReadJson(await s.Http.GetAsync($"/databases/db/docs?id=m/{i}"))).GetProperty("Results")[0].GetProperty("I").GetInt32());
    }
}
