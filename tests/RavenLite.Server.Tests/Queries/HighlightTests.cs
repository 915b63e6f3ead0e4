namespace RavenLite.Server.Tests.Queries;

/// <summary>include highlight(): fragments follow the document as it is now; bad arguments are 400s.</summary>
public sealed class HighlightTests
{
    private static async Task<JsonElement> Query(TestServer server, string rql, JsonObject parameters, HttpStatusCode expect = HttpStatusCode.OK, bool wait = true)
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = parameters.DeepClone(), ["WaitForNonStaleResults"] = wait };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} → {(int)r.StatusCode}: {json}");
        return json;
    }

    [Fact]
    public async Task Fragments_come_from_the_text_as_it_is_now_with_the_given_tags()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        async Task Put(string text) => Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/docs?id=notes/1",
            TestServer.Json(new JsonObject { ["Text"] = text, ["@metadata"] = new JsonObject { ["@collection"] = "Notes" } }.ToJsonString()))).StatusCode);
        await Put("red apples and green pears");
        var p = new JsonObject { ["s"] = "apples", ["o"] = new JsonObject { ["PreTags"] = new JsonArray("<em>"), ["PostTags"] = new JsonArray("</em>") } };
        var first = await Query(server, "from Notes where search(Text, $s) include highlight(Text, 100, 1, $o)", p);
        Assert.Equal("red <em>apples</em> and green pears", first.GetProperty("Highlightings").GetProperty("Text").GetProperty("notes/1")[0].GetString());
        // Indexing paused: the entry is behind the document, whose current text is highlighted.
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/stop", null)).StatusCode);
        await Put("apples, apples everywhere");
        var second = await Query(server, "from Notes where search(Text, $s) include highlight(Text, 100, 1, $o)", p, wait: false);
        Assert.True(second.GetProperty("IsStale").GetBoolean());
        Assert.Equal("<em>apples</em>, <em>apples</em> everywhere", second.GetProperty("Highlightings").GetProperty("Text").GetProperty("notes/1")[0].GetString());
    }

    [Theory]
    [InlineData("include highlight(Text, 'long', 1)", "fragment length")]
    [InlineData("include highlight(Text, 100, 0)", "fragment count")]
    [InlineData("include highlight(Text, 100, 1, $o)", "PreTags")]
    [InlineData("include highlight(Text, 100)", "expected ','")]
    public async Task Bad_highlight_arguments_are_400(string include, string named)
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var answer = await Query(server, "from Notes where search(Text, 'x') " + include, new JsonObject { ["o"] = new JsonObject { ["PreTags"] = "<b>" } }, HttpStatusCode.BadRequest);
        Assert.Contains(named, answer.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }
}
