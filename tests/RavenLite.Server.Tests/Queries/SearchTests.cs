namespace RavenLite.Server.Tests.Queries;

/// <summary>
/// search() on Lucene: Lucene's query syntax inside search() on Search fields of static and
/// auto indexes — phrases, proximity, AND/OR/NOT, prefix/infix wildcards, fuzzy, boosts — with
/// <c>order by score()</c> and <c>@index-score</c>; a malformed expression is a 400; a document changed
/// since it was indexed is judged as it is now.
/// </summary>
public sealed class SearchTests
{
    private static readonly string[] Texts =
    [
        "the quick brown fox jumps over the lazy dog", // 0
        "a quick fox", // 1
        "brown bears are not quick", // 2
        "lazy afternoons and quick brown dogs", // 3
        "nothing to see here", // 4
        "quick quick quick", // 5
        "the fox, the hound and the brownish cow", // 6
    ];

    private static async Task<TestServer> StartAsync()
    {
        var server = await TestServer.StartWithDatabaseAsync();
        var commands = new JsonArray();
        for (int i = 0; i < Texts.Length; i++)
            commands.Add(new JsonObject { ["Id"] = $"notes/{i}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Text"] = Texts[i], ["N"] = i, ["@metadata"] = new JsonObject { ["@collection"] = "Notes" } } });
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        var index = """{"Indexes":[{"Name":"Notes/ByText","Maps":["from n in docs.Notes select new { n.Text, n.N }"],"Fields":{"Text":{"Indexing":"Search"}}}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        return server;
    }

    private static async Task<JsonElement> Query(TestServer server, string rql, string search, HttpStatusCode expect = HttpStatusCode.OK, bool wait = true)
    {
        var body = new JsonObject { ["Query"] = rql, ["QueryParameters"] = new JsonObject { ["s"] = search }, ["WaitForNonStaleResults"] = wait, ["WaitForNonStaleResultsTimeout"] = "00:00:30" };
        var r = await server.Http.PostAsync("/databases/db/queries", TestServer.Json(body.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(expect == r.StatusCode, $"{rql} {search} → {(int)r.StatusCode}: {json}");
        return json;
    }

    private static List<int> Ns(JsonElement answer) => answer.GetProperty("Results").EnumerateArray().Select(d => d.GetProperty("N").GetInt32()).ToList();

    [Theory]
    [InlineData("quick", new[] { 0, 1, 2, 3, 5 })]
    [InlineData("\"quick brown\"", new[] { 0, 3 })] // a phrase: adjacent, in order
    [InlineData("\"quick fox\"~1", new[] { 0, 1 })] // proximity
    [InlineData("quick AND fox", new[] { 0, 1 })]
    [InlineData("+quick -lazy", new[] { 1, 2, 5 })]
    [InlineData("quick NOT brown", new[] { 1, 5 })]
    [InlineData("fox OR bears", new[] { 0, 1, 2, 6 })]
    [InlineData("brown*", new[] { 0, 2, 3, 6 })] // prefix
    [InlineData("*row*", new[] { 0, 2, 3, 6 })] // infix
    [InlineData("*ound", new[] { 6 })] // suffix
    [InlineData("qu?ck", new[] { 0, 1, 2, 3, 5 })]
    [InlineData("qiuck~", new[] { 0, 1, 2, 3, 5 })] // fuzzy
    [InlineData("THE LAZY", new[] { 0, 3, 6 })] // case-insensitive, OR by default
    [InlineData("(hound OR bears) AND brown*", new[] { 2, 6 })]
    public async Task Lucene_syntax_inside_search_on_a_static_index(string search, int[] expected)
    {
        await using var server = await StartAsync();
        var answer = await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by N", search);
        Assert.Equal(expected, Ns(answer));
        Assert.Equal(expected.Length, answer.GetProperty("TotalResults").GetInt32());
    }

    [Fact]
    public async Task Order_by_score_ranks_better_matches_first_and_answers_carry_their_score()
    {
        await using var server = await StartAsync();
        var answer = await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by score()", "quick brown"); // best first, as RavenDB
        var ns = Ns(answer);
        var scores = answer.GetProperty("Results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@index-score").GetDouble()).ToList();
        Assert.Equal([0, 1, 2, 3, 5], ns.Order().ToList());
        Assert.True(scores.SequenceEqual(scores.OrderByDescending(x => x)), string.Join(", ", scores));
        Assert.True(scores[0] > scores[^1], string.Join(", ", scores));
        Assert.DoesNotContain(1, ns.Take(2)); // "a quick fox" has one of the two words: never among the best
        // A boost moves the boosted word's matches to the top.
        var boosted = Ns(await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by score()", "fox^10 quick"));
        Assert.Equal([0, 1], boosted.Take(2).Order().ToList());
        var worstFirst = Ns(await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by score() desc", "fox^10 quick"));
        Assert.Equal([0, 1], worstFirst.TakeLast(2).Order().ToList());
        // A dynamic query: an auto index with the field searched, same syntax.
        var dynamic = await Query(server, "from Notes where search(Text, $s) order by N", "\"brown fox\" OR \"brown dogs\"");
        Assert.Equal([0, 3], Ns(dynamic));
        Assert.StartsWith("Auto/Notes", dynamic.GetProperty("IndexName").GetString(), StringComparison.Ordinal);
        // Projections carry the score too.
        var projected = await Query(server, "from index 'Notes/ByText' where search(Text, $s) select N", "hound");
        Assert.True(projected.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@index-score").GetDouble() > 0);
    }

    [Fact]
    public async Task The_and_operator_argument_makes_every_term_required()
    {
        await using var server = await StartAsync();
        Assert.Equal([0, 2, 3], Ns(await Query(server, "from index 'Notes/ByText' where search(Text, $s, and) order by N", "quick brown")));
        Assert.Equal([0, 1, 2, 3, 5], Ns(await Query(server, "from index 'Notes/ByText' where search(Text, $s, or) order by N", "quick brown")));
        var bad = await Query(server, "from index 'Notes/ByText' where search(Text, $s, maybe)", "quick", HttpStatusCode.BadRequest);
        Assert.Contains("'and' or 'or'", bad.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_field_analyzer_named_in_the_definition_is_used_for_indexing_and_search()
    {
        await using var server = await StartAsync();
        var index = """
            {"Indexes":[
              {"Name":"Notes/English","Maps":["from n in docs.Notes select new { n.Text, n.N }"],"Fields":{"Text":{"Analyzer":"EnglishAnalyzer"}}},
              {"Name":"Notes/Standard","Maps":["from n in docs.Notes select new { n.Text, n.N }"],"Fields":{"Text":{"Indexing":"Search","Analyzer":"Lucene.Net.Analysis.Standard.StandardAnalyzer, Lucene.Net.Analysis.Common"}}}]}
            """;
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        // English stems: "jumping" finds "jumps", "dog" finds "dogs" and "dog".
        Assert.Equal([0], Ns(await Query(server, "from index 'Notes/English' where search(Text, $s) order by N", "jumping")));
        Assert.Equal([0, 3], Ns(await Query(server, "from index 'Notes/English' where search(Text, $s) order by N", "dog")));
        // The default analyzer does not stem.
        Assert.Empty(Ns(await Query(server, "from index 'Notes/ByText' where search(Text, $s)", "jumping")));
        // StandardAnalyzer drops English stop words.
        Assert.Empty(Ns(await Query(server, "from index 'Notes/Standard' where search(Text, $s)", "the")));
        Assert.Equal([0, 6], Ns(await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by N", "the")));
        var definition = await TestServer.ReadJson(await server.Http.GetAsync("/databases/db/indexes?name=Notes%2FEnglish"));
        Assert.Equal("EnglishAnalyzer", definition.GetProperty("Results")[0].GetProperty("Fields").GetProperty("Text").GetProperty("Analyzer").GetString());
        var bad = await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(
            """{"Indexes":[{"Name":"Notes/Bad","Maps":["from n in docs.Notes select new { n.Text }"],"Fields":{"Text":{"Analyzer":"KlingonAnalyzer"}}}]}"""));
        Assert.Equal(HttpStatusCode.BadRequest, bad.StatusCode);
        var error = await TestServer.ReadJson(bad);
        Assert.Equal("Raven.Client.Exceptions.Documents.Compilation.IndexCompilationException", error.GetProperty("Type").GetString());
        Assert.Equal("KlingonAnalyzer", error.GetProperty("ProblematicText").GetString());
    }

    [Theory]
    [InlineData("\"unclosed phrase")]
    [InlineData("quick AND")]
    [InlineData("(quick")]
    public async Task A_malformed_search_expression_is_a_400_naming_it(string search)
    {
        await using var server = await StartAsync();
        var error = await Query(server, "from index 'Notes/ByText' where search(Text, $s)", search, HttpStatusCode.BadRequest);
        Assert.Equal("Raven.Client.Exceptions.InvalidQueryException", error.GetProperty("Type").GetString());
        Assert.Contains("search()", error.GetProperty("Message").GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_document_changed_since_it_was_indexed_is_judged_as_it_is_now()
    {
        await using var server = await StartAsync();
        await Query(server, "from index 'Notes/ByText' where search(Text, $s)", "quick");
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/stop", TestServer.Json(""))).StatusCode);
        var put = await server.Http.PutAsync("/databases/db/docs?id=notes/0", TestServer.Json("""{"Text":"a slow brown fox","N":0,"@metadata":{"@collection":"Notes"}}"""));
        Assert.Equal(HttpStatusCode.Created, put.StatusCode);
        var stale = await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by N", "\"quick brown\"", wait: false);
        Assert.True(stale.GetProperty("IsStale").GetBoolean());
        Assert.Equal([3], Ns(stale)); // notes/0 was a hit in the index but no longer matches
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.PostAsync("/databases/db/admin/indexes/start", TestServer.Json(""))).StatusCode);
        var fresh = await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by N", "slow");
        Assert.Equal([0], Ns(fresh));
    }

    [Fact]
    public async Task Timings_and_explanations_account_for_the_answer()
    {
        await using var server = await StartAsync();
        var answer = await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by score() include timings(), explanations() limit 3", "fox quick");
        var timings = answer.GetProperty("Timings");
        double total = timings.GetProperty("DurationInMs").GetDouble();
        var query = timings.GetProperty("Timings").GetProperty("Query");
        Assert.InRange(query.GetProperty("DurationInMs").GetDouble(), 0, total);
        Assert.InRange(query.GetProperty("Timings").GetProperty("Lucene").GetProperty("DurationInMs").GetDouble(), 0, query.GetProperty("DurationInMs").GetDouble());
        Assert.True(timings.GetProperty("Timings").TryGetProperty("Sort", out _));
        var explanations = answer.GetProperty("Explanations");
        var ids = answer.GetProperty("Results").EnumerateArray().Select(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!).ToList();
        Assert.Equal(3, ids.Count);
        foreach (string id in ids)
        {
            string why = explanations.GetProperty(id)[0].GetString()!;
            // Lucene's explanation of the same score the answer carries.
            double score = answer.GetProperty("Results").EnumerateArray().Single(d => d.GetProperty("@metadata").GetProperty("@id").GetString() == id).GetProperty("@metadata").GetProperty("@index-score").GetDouble();
            Assert.StartsWith(score.ToString("0.####", System.Globalization.CultureInfo.InvariantCulture)[..4], why, StringComparison.Ordinal);
            Assert.Contains("idf", why, StringComparison.Ordinal);
        }
        var plain = await Query(server, "from index 'Notes/ByText' where search(Text, $s)", "fox");
        Assert.False(plain.TryGetProperty("Timings", out _));
        Assert.False(plain.TryGetProperty("Explanations", out _));
    }

    /// <summary>Without order by score(), the page's @index-score is computed after collecting (a scorer advanced to each answer): the same numbers.</summary>
    [Fact]
    public async Task Page_scores_computed_late_equal_the_scores_of_a_score_ordered_query()
    {
        await using var server = await StartAsync();
        static Dictionary<string, double> Scores(JsonElement answer) => answer.GetProperty("Results").EnumerateArray()
            .ToDictionary(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!, d => d.GetProperty("@metadata").GetProperty("@index-score").GetDouble());
        foreach (string text in new[] { "fox quick", "\"quick brown\" OR lazy", "bro* -bears" })
        {
            var late = Scores(await Query(server, "from index 'Notes/ByText' where search(Text, $s)", text));
            var ranked = Scores(await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by score()", text));
            Assert.Equal(ranked.Keys.Order(), late.Keys.Order());
            Assert.True(late.Count > 0);
            foreach (var (id, score) in ranked)
                Assert.Equal(score, late[id], 5);
        }
    }

    /// <summary>
    /// A lone word skips the classic parser (SearchQuery.SingleTerm): for each analyzer, the shortcut builds the query the
    /// parser builds, and leaves to the parser everything that is not one plain token (stop words, operators, syntax,
    /// several words, non-ASCII text, a word the analyzer splits).
    /// </summary>
    [Fact]
    public void A_lone_word_is_the_query_the_classic_parser_builds()
    {
        var analyzers = new Lucene.Net.Analysis.Analyzer[]
        {
            RavenLite.Server.Indexing.SearchAnalyzer.Instance,
            RavenLite.Server.Indexing.AnalyzerCatalog.Resolve("EnglishAnalyzer")!,
            RavenLite.Server.Indexing.AnalyzerCatalog.Resolve("Lucene.Net.Analysis.Standard.StandardAnalyzer, Lucene.Net.Analysis.Common")!,
            RavenLite.Server.Indexing.AnalyzerCatalog.Resolve("WhitespaceAnalyzer")!,
        };
        string[] words = ["quick", "Quick", "QUICK", "123", "A123b", "running", "the", "Foxes", "x"];
        string[] notShortcut = ["AND", "OR", "NOT", "TO", "quick fox", "quick*", "qu?ck", "fox~", "\"quick\"", "+quick", "-quick", "quick^2", "héllo", "", "e-mail", "a.b"];
        foreach (var analyzer in analyzers)
        {
            var parser = new Lucene.Net.QueryParsers.Classic.QueryParser(Lucene.Net.Util.LuceneVersion.LUCENE_48, "f", analyzer);
            foreach (string word in words)
            {
                var parsed = parser.Parse(word);
                var shortcut = RavenLite.Server.Indexing.SearchQuery.SingleTerm("f", word, analyzer);
                if (parsed is Lucene.Net.Search.TermQuery)
                    Assert.Equal(parsed, shortcut);
                else
                    Assert.Null(shortcut); // a stop word: the parser's (empty) answer stands
            }
            foreach (string text in notShortcut)
                Assert.Null(RavenLite.Server.Indexing.SearchQuery.SingleTerm("f", text, analyzer));
        }
    }

    /// <summary>
    /// Pages of a lone search() (which keeps only the hits up to the page's end and counts the rest): every page is the
    /// slice of the whole answer at its offset, with the whole answer's total and the same @index-score per document —
    /// also after updates and deletes have moved entries to new segments.
    /// </summary>
    [Fact]
    public async Task Pages_of_a_search_are_slices_of_the_whole_answer_with_its_total()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        var index = """{"Indexes":[{"Name":"Notes/ByText","Maps":["from n in docs.Notes select new { n.Text, n.N }"],"Fields":{"Text":{"Indexing":"Search"}}}]}""";
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/databases/db/admin/indexes", TestServer.Json(index))).StatusCode);
        string[] words = ["red", "green", "blue", "red green", "green blue red"];
        async Task Put(int from, int to, int shift)
        {
            var commands = new JsonArray();
            for (int i = from; i < to; i++)
                commands.Add(new JsonObject { ["Id"] = $"notes/{i}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["Text"] = words[(i + shift) % words.Length] + " n" + i, ["N"] = i, ["@metadata"] = new JsonObject { ["@collection"] = "Notes" } } });
            Assert.Equal(HttpStatusCode.Created, (await server.Http.PostAsync("/databases/db/bulk_docs", TestServer.Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        }
        await Put(0, 300, 0);
        for (int round = 0; round < 2; round++)
        {
            foreach (string word in new[] { "red", "blue", "n7", "missing" })
            {
                var whole = await Query(server, "from index 'Notes/ByText' where search(Text, $s) limit 1000", word);
                var all = Ns(whole);
                var scores = whole.GetProperty("Results").EnumerateArray().ToDictionary(d => d.GetProperty("N").GetInt32(), d => d.GetProperty("@metadata").GetProperty("@index-score").GetDouble());
                Assert.Equal(all.Count, whole.GetProperty("TotalResults").GetInt64());
                // The same scores as when every hit is scored (order by score()).
                var ranked = await Query(server, "from index 'Notes/ByText' where search(Text, $s) order by score() limit 1000", word);
                Assert.Equal(all.Order(), Ns(ranked).Order());
                foreach (var d in ranked.GetProperty("Results").EnumerateArray())
                    Assert.Equal(scores[d.GetProperty("N").GetInt32()], d.GetProperty("@metadata").GetProperty("@index-score").GetDouble(), 5);
                foreach (var (offset, size) in new[] { (0, 1), (0, 25), (10, 7), (all.Count - 3, 10), (all.Count + 5, 5) })
                {
                    if (offset < 0)
                        continue;
                    var page = await Query(server, $"from index 'Notes/ByText' where search(Text, $s) limit {offset}, {size}", word);
                    Assert.Equal(all.Skip(offset).Take(size).ToList(), Ns(page));
                    Assert.Equal(all.Count, page.GetProperty("TotalResults").GetInt64());
                    foreach (var d in page.GetProperty("Results").EnumerateArray())
                        Assert.Equal(scores[d.GetProperty("N").GetInt32()], d.GetProperty("@metadata").GetProperty("@index-score").GetDouble());
                }
            }
            // Updates (new words) and deletes: entries move to new segments, some are gone.
            await Put(0, 120, 2);
            for (int i = 200; i < 230; i++)
                Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync($"/databases/db/docs?id=notes/{i}")).StatusCode);
        }
    }
}
