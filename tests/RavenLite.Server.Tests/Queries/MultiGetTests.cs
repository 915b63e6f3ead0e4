using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// <c>POST /multi_get</c>: each inner request answered exactly as it would be alone (status, body, headers), in order,
/// in one round trip; <c>If-None-Match</c> inside gives 304 with no result; an inner failure stays inside its slot;
/// a bad envelope (too many requests, another database, a stream, no Requests) is a 400 that runs nothing.
/// </summary>
public sealed class MultiGetTests
{
    private static async Task<JsonElement> MultiGet(TestServer s, string body, HttpStatusCode expect = HttpStatusCode.OK)
    {
        var r = await s.Http.PostAsync("/databases/db/multi_get", Json(body));
        var json = await ReadJson(r);
        Assert.True(r.StatusCode == expect, $"{(int)r.StatusCode}: {json}");
        return json;
    }

    [Fact]
    public async Task Inner_requests_answer_as_they_would_alone_in_order()
    {
        await using var s = await StartWithDatabaseAsync();
        for (int i = 1; i <= 3; i++)
            Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/databases/db/docs?id=users/{i}", Json("{\"Name\":\"u" + i + "\",\"Age\":" + (i * 10) + ",\"@metadata\":{\"@collection\":\"Users\"}}"))).StatusCode);
        var alone = await s.Http.GetAsync("/databases/db/docs?id=users/1");
        string etag = alone.Headers.ETag!.Tag;
        var aloneJson = await ReadJson(alone);

        var answer = await MultiGet(s, """
            {"Requests":[
              {"Url":"/databases/db/docs","Query":"?id=users/1","Method":"GET","Headers":{}},
              {"Url":"/databases/db/queries","Query":"?queryHash=1","Method":"POST","Headers":{},"Content":"{\"Query\":\"from Users where Age > $a\",\"QueryParameters\":{\"a\":15}}"},
              {"Url":"/databases/db/queries","Method":"POST","Content":{"Query":"from Users where Age = 10"}},
              {"Url":"/databases/db/docs","Query":"?id=users/404"},
              {"Url":"/databases/db/queries","Method":"POST","Content":{"Query":"from Users where"}},
              {"Url":"/databases/db/nothing-here","Query":""},
              {"Url":"/databases/db/docs","Query":"?id=users/1","Headers":{"If-None-Match":"\"ETAG\""}},
              {"Url":"/databases/db/queries","Method":"POST","Content":{"Query":"from index 'Missing'"}}
            ]}
            """.Replace("ETAG", etag.Trim('"'), StringComparison.Ordinal));
        var results = answer.GetProperty("Results");
        Assert.Equal(8, results.GetArrayLength());

        Assert.Equal(200, results[0].GetProperty("StatusCode").GetInt32());
        Assert.Equal(aloneJson.GetRawText(), results[0].GetProperty("Result").GetRawText());
        Assert.Equal(etag.Trim('"'), results[0].GetProperty("Headers").GetProperty("ETag").GetString());

        Assert.Equal(200, results[1].GetProperty("StatusCode").GetInt32());
        Assert.Equal(2, results[1].GetProperty("Result").GetProperty("TotalResults").GetInt64());
        Assert.Equal("u1", results[2].GetProperty("Result").GetProperty("Results")[0].GetProperty("Name").GetString());

        Assert.Equal(404, results[3].GetProperty("StatusCode").GetInt32());
        Assert.Equal(400, results[4].GetProperty("StatusCode").GetInt32());
        Assert.Contains("InvalidQueryException", results[4].GetProperty("Result").GetProperty("Type").GetString());
        Assert.Equal(400, results[5].GetProperty("StatusCode").GetInt32());
        Assert.Contains("RouteNotFound", results[5].GetProperty("Result").GetProperty("Type").GetString());

        Assert.Equal(304, results[6].GetProperty("StatusCode").GetInt32());
        Assert.Equal(JsonValueKind.Null, results[6].GetProperty("Result").ValueKind);

        // A missing index is RavenDB's 500 IndexDoesNotExistException inside multi_get too (a 404 would read as "no result").
        Assert.Equal(500, results[7].GetProperty("StatusCode").GetInt32());
        Assert.EndsWith("IndexDoesNotExistException", results[7].GetProperty("Result").GetProperty("Type").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_bad_envelope_is_refused_and_runs_nothing()
    {
        await using var s = await StartWithDatabaseAsync();
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/admin/databases?name=other", Json("""{"DatabaseName":"other"}"""))).StatusCode);
        var many = new StringBuilder("""{"Requests":[""");
        for (int i = 0; i < 10_000; i++)
            many.Append(i == 0 ? "" : ",").Append("""{"Url":"/databases/db/docs","Query":"?id=a"}""");
        many.Append("]}");
        foreach (string bad in new[]
        {
            many.ToString(),
            """{"Requests":[{"Url":"/databases/db/docs","Method":"PUT","Query":"?id=x/1","Content":{"A":1}},{"Url":"/databases/other/docs","Query":"?id=a"}]}""",
            """{"Requests":[{"Url":"/databases/db/docs","Method":"PUT","Query":"?id=x/1","Content":{"A":1}},{"Url":"/databases/db/streams/docs","Query":"?startsWith=a"}]}""",
            """{"Requests":[{"Url":"/databases/db/docs","Method":"PUT","Query":"?id=x/1","Content":{"A":1}},{"Url":"/databases/db/multi_get","Method":"POST"}]}""",
            """{"Requests":[{"Url":"/databases/db/docs","Method":"PUT","Query":"?id=x/1","Content":{"A":1}},{"Query":"?id=a"}]}""",
            """{"Nope":[]}""",
            """[1,2]""",
        })
        {
            var json = await MultiGet(s, bad, HttpStatusCode.BadRequest);
            Assert.Contains("BadRequestException", json.GetProperty("Type").GetString());
        }
        // None of the envelopes ran its first (valid) request.
        Assert.Equal(HttpStatusCode.NotFound, (await s.Http.GetAsync("/databases/db/docs?id=x/1")).StatusCode);
    }
}
