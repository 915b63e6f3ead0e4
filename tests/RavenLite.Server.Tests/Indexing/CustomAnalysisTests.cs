namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// Custom analyzers and sorters as RavenDB's clients store them (<c>PutAnalyzersOperation</c>,
/// <c>PutServerWideAnalyzersOperation</c>, <c>PutSortersOperation</c>, <c>PutServerWideSortersOperation</c> and their
/// deletes): C# compiled with Roslyn, named by index fields and by <c>order by custom(field, 'Name')</c>, kept across a
/// restart; code that does not compile, and names that do not exist, are refused.
/// </summary>
public sealed class CustomAnalysisTests
{
    private const string Db = "/databases/db";

    // Every word becomes "x{its length}": a search matches words of the same length, whatever their letters.
    private const string ByLengthAnalyzer = """
        using System.IO;
        using Lucene.Net.Analysis;
        using Lucene.Net.Analysis.Core;
        using Lucene.Net.Analysis.TokenAttributes;
        using Lucene.Net.Util;

        public sealed class LengthTokens : TokenFilter
        {
            private readonly ICharTermAttribute _term;
            public LengthTokens(TokenStream input) : base(input) { _term = AddAttribute<ICharTermAttribute>(); }
            public override bool IncrementToken()
            {
                if (!m_input.IncrementToken()) return false;
                string replaced = "x" + _term.Length;
                _term.SetEmpty().Append(replaced);
                return true;
            }
        }

        public class ByLength : Analyzer
        {
            protected override TokenStreamComponents CreateComponents(string fieldName, TextReader reader)
            {
                var source = new WhitespaceTokenizer(LuceneVersion.LUCENE_48, reader);
                return new TokenStreamComponents(source, new LengthTokens(source));
            }
        }
        """;

    // Shorter first, then ordinal.
    private const string ShortFirstSorter = """
        public class ShortFirst : RavenLite.Server.Indexing.Analysis.CustomSorter
        {
            public override int Compare(string x, string y) => x.Length != y.Length ? x.Length.CompareTo(y.Length) : string.CompareOrdinal(x, y);
        }
        """;

    // RavenDB's constructor; reversed alphabet order of the last letter.
    private const string LastLetterSorter = """
        using System.Collections.Generic;
        public class LastLetter : RavenLite.Server.Indexing.Analysis.CustomSorter
        {
            public LastLetter(string fieldName, int numHits, int sortPos, bool reversed, List<string> diagnostics) { }
            public override int Compare(string x, string y) => x[x.Length - 1].CompareTo(y[y.Length - 1]);
        }
        """;

    private static async Task<HttpResponseMessage> Send(TestServer server, HttpMethod method, string url, string? body = null)
    {
        using var request = new HttpRequestMessage(method, url) { Content = body == null ? null : TestServer.Json(body) };
        return await server.Http.SendAsync(request);
    }

    private static string Definitions(string property, string name, string code) =>
        new JsonObject { [property] = new JsonArray(new JsonObject { ["Name"] = name, ["Code"] = code }) }.ToJsonString();

    private static async Task<List<string>> Names(TestServer server, string rql)
    {
        var body = new JsonObject { ["Query"] = rql, ["WaitForNonStaleResults"] = true };
        var r = await server.Http.PostAsync(Db + "/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.OK, json.ToString());
        return json.GetProperty("Results").EnumerateArray().Select(x => x.GetProperty("Name").GetString()!).ToList();
    }

    private static async Task PutUsers(TestServer server, params string[] names)
    {
        var commands = new JsonArray();
        for (int i = 0; i < names.Length; i++)
            commands.Add(new JsonObject { ["Id"] = $"users/{i + 1}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Name"] = names[i], ["@metadata"] = new JsonObject { ["@collection"] = "Users" } } });
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync(Db + "/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
    }

    [Fact]
    public async Task A_database_analyzer_analyzes_the_fields_that_name_it_and_survives_a_restart()
    {
        using var dir = new TempDirectory("ravenlite-analysis");
        await using (var server = await TestServer.StartWithDatabaseAsync(dataDir: dir.Path))
        {
            await PutUsers(server, "hello", "hi", "table");
            var put = await Send(server, HttpMethod.Put, Db + "/admin/analyzers", Definitions("Analyzers", "ByLength", ByLengthAnalyzer));
            Assert.Equal(HttpStatusCode.Created, put.StatusCode);
            Assert.Equal(HttpStatusCode.Created, (await Send(server, HttpMethod.Put, Db + "/admin/indexes",
                """{"Indexes":[{"Name":"Users/ByName","Maps":["from u in docs.Users select new { u.Name }"],"Fields":{"Name":{"Indexing":"Search","Analyzer":"ByLength"}}}]}""")).StatusCode);
            // Five letters match five letters: the field's text went through the custom analyzer, and so did the query's.
            Assert.Equal(["hello", "table"], await Names(server, "from index 'Users/ByName' where search(Name, 'abcde') order by Name"));
            Assert.Equal(["hi"], await Names(server, "from index 'Users/ByName' where search(Name, 'zz')"));
        }
        await using (var server = await TestServer.StartAsync(dir.Path))
        {
            await PutUsers(server, "hello", "hi", "table", "world");
            Assert.Equal(["hello", "table", "world"], await Names(server, "from index 'Users/ByName' where search(Name, 'abcde') order by Name"));
            Assert.Equal(HttpStatusCode.NoContent, (await Send(server, HttpMethod.Delete, Db + "/admin/analyzers?name=ByLength")).StatusCode);
            // Gone: a new index naming it is refused.
            var refused = await Send(server, HttpMethod.Put, Db + "/admin/indexes",
                """{"Indexes":[{"Name":"Again","Maps":["from u in docs.Users select new { u.Name }"],"Fields":{"Name":{"Indexing":"Search","Analyzer":"ByLength"}}}]}""");
            Assert.Equal(HttpStatusCode.BadRequest, refused.StatusCode);
            Assert.Contains("there is no analyzer 'ByLength'", await refused.Content.ReadAsStringAsync());
        }
    }

    [Fact]
    public async Task A_server_wide_analyzer_is_named_by_any_database_and_bad_code_is_refused()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await PutUsers(server, "hello", "hi");
        Assert.Equal(HttpStatusCode.Created, (await Send(server, HttpMethod.Put, "/admin/analyzers", Definitions("Analyzers", "ByLength", ByLengthAnalyzer))).StatusCode);
        Assert.Equal(HttpStatusCode.Created, (await Send(server, HttpMethod.Put, Db + "/admin/indexes",
            """{"Indexes":[{"Name":"Users/ByName","Maps":["from u in docs.Users select new { u.Name }"],"Fields":{"Name":{"Indexing":"Search","Analyzer":"ByLength"}}}]}""")).StatusCode);
        Assert.Equal(["hi"], await Names(server, "from index 'Users/ByName' where search(Name, 'ab')"));

        var bad = await Send(server, HttpMethod.Put, Db + "/admin/analyzers", Definitions("Analyzers", "Broken", "public class Broken : Lucene.Net.Analysis.Analyzer { int x = ; }"));
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
        Assert.Contains("Cannot compile analyzer 'Broken': line 1", await bad.Content.ReadAsStringAsync());
        var notAnAnalyzer = await Send(server, HttpMethod.Put, "/admin/analyzers", Definitions("Analyzers", "Plain", "public class Plain { }"));
        Assert.Equal(HttpStatusCode.BadRequest, notAnAnalyzer.StatusCode);
        Assert.Contains("must define one public class deriving from Lucene.Net.Analysis.Analyzer", await notAnAnalyzer.Content.ReadAsStringAsync());
        Assert.Equal(HttpStatusCode.NoContent, (await Send(server, HttpMethod.Delete, "/admin/analyzers?name=ByLength")).StatusCode);
    }

    [Fact]
    public async Task Order_by_custom_uses_a_database_or_server_wide_sorter()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        await PutUsers(server, "bob", "alexandra", "al", "zed", "mia");
        Assert.Equal(HttpStatusCode.Created, (await Send(server, HttpMethod.Put, Db + "/admin/sorters", Definitions("Sorters", "ShortFirst", ShortFirstSorter))).StatusCode);
        Assert.Equal(["al", "bob", "mia", "zed", "alexandra"], await Names(server, "from Users order by custom(Name, 'ShortFirst')"));
        Assert.Equal(["alexandra", "zed", "mia", "bob", "al"], await Names(server, "from Users order by custom(Name, 'ShortFirst') desc"));
        Assert.Equal(HttpStatusCode.Created, (await Send(server, HttpMethod.Put, "/admin/sorters", Definitions("Sorters", "LastLetter", LastLetterSorter))).StatusCode);
        Assert.Equal(["mia", "bob", "zed", "al"], (await Names(server, "from Users order by custom(Name, 'LastLetter'), Name")).Where(n => n != "alexandra").ToList());

        var missing = await server.Http.PostAsync(Db + "/queries", TestServer.Json("""{"Query":"from Users order by custom(Name, 'Nope')"}"""));
        Assert.Equal(HttpStatusCode.BadRequest, missing.StatusCode);
        Assert.Contains("There is no sorter 'Nope'", await missing.Content.ReadAsStringAsync());
        var bad = await Send(server, HttpMethod.Put, Db + "/admin/sorters", Definitions("Sorters", "Bad", "public class Bad : RavenLite.Server.Indexing.Analysis.CustomSorter { }"));
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
        Assert.Contains("Cannot compile sorter 'Bad'", await bad.Content.ReadAsStringAsync());
        Assert.Equal(HttpStatusCode.NoContent, (await Send(server, HttpMethod.Delete, Db + "/admin/sorters?name=ShortFirst")).StatusCode);
        Assert.Equal(HttpStatusCode.BadRequest, (await server.Http.PostAsync(Db + "/queries", TestServer.Json("""{"Query":"from Users order by custom(Name, 'ShortFirst')"}"""))).StatusCode);
    }
}
