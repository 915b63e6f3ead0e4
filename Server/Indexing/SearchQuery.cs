using Lucene.Net.Analysis;
using Lucene.Net.Index.Memory;
using Lucene.Net.QueryParsers.Classic;
using Lucene.Net.Search;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// The text of <c>search(field, '...')</c> as a Lucene query over the field's analyzed text (Lucene's
/// classic query syntax, as RavenDB: terms OR'ed by default, AND'ed with <c>search(field, '...', and)</c>, <c>AND</c>/<c>OR</c>/<c>NOT</c>/<c>+</c>/<c>-</c>,
/// <c>"phrases"</c>, <c>"phrase"~N</c> proximity, <c>prefix*</c>, <c>*infix*</c> and <c>?</c> wildcards,
/// <c>fuzzy~</c>, <c>term^2</c> boosts), analyzed with the field's analyzer (<see cref="SearchAnalyzer"/> unless
/// the definition names one). A query that does not
/// parse is a 400 naming the problem. Also answers whether loose text values match it (a document that
/// changed after it was indexed, or a scan), through a one-document in-memory index. Thread-safe.
/// </summary>
internal sealed class SearchQuery
{
    /// <summary>The analyzed Lucene field of a Search field.</summary>
    public static string FieldName(ushort fieldId) => "s" + fieldId.ToString(System.Globalization.CultureInfo.InvariantCulture);

    /// <summary>The field name of <see cref="Loose"/> (any one text, analyzed with the query's analyzer).</summary>
    internal const string LooseField = "text";
    private readonly Lazy<Query> _loose;

    private readonly Analyzer _analyzer;

    private SearchQuery(Query indexed, Lazy<Query> loose, Analyzer analyzer)
    {
        Indexed = indexed;
        _loose = loose;
        _analyzer = analyzer;
    }

    /// <summary>The same query over <see cref="LooseField"/>: what loose values and highlighting are matched with (parsed when first asked for).</summary>
    public Query Loose => _loose.Value;

    /// <summary>The query over the index's field.</summary>
    public Query Indexed { get; }

    /// <summary>Parses <paramref name="text"/> for the index field <paramref name="field"/> (null: only loose values are matched).</summary>
    public static SearchQuery Parse(string text, string? field, int position, bool allTerms = false, Analyzer? analyzer = null)
    {
        analyzer ??= SearchAnalyzer.Instance;
        var loose = new Lazy<Query>(() => ParseFor(LooseField, text, position, allTerms, analyzer));
        if (field == null)
            return new SearchQuery(new MatchAllDocsQuery(), new Lazy<Query>(loose.Value), analyzer); // parsed now: a syntax error is this query's 400
        // The same text parses the same for any field: the index field's parse reports syntax errors, and the loose
        // query (for documents changed since they were indexed, and highlighting) is parsed only if one needs it.
        return new SearchQuery(ParseFor(field, text, position, allTerms, analyzer), loose, analyzer);
    }

    private static Query ParseFor(string field, string text, int position, bool allTerms, Analyzer analyzer)
    {
        if (SingleTerm(field, text, analyzer) is { } term)
            return term;
        var parser = new QueryParser(LuceneVersion.LUCENE_48, field, analyzer)
        {
            DefaultOperator = allTerms ? Operator.AND : Operator.OR,
            AllowLeadingWildcard = true,
            LowercaseExpandedTerms = true,
        };
        try
        {
            return parser.Parse(text);
        }
        catch (ParseException e)
        {
            throw new InvalidQueryException($"Invalid query at position {position}: the search() expression '{text}' is not valid Lucene syntax: {e.Message}");
        }
        catch (BooleanQuery.TooManyClausesException e)
        {
            throw new InvalidQueryException($"Invalid query at position {position}: the search() expression '{text}' expands to too many terms: {e.Message}");
        }
    }

    /// <summary>
    /// The query of a lone word of letters and digits that the analyzer makes one token — the commonest search():
    /// the term query the classic parser would build (its own parse, a tenth of a one-word full-text query's CPU,
    /// skipped); null for anything else (operators, syntax characters, several words or tokens).
    /// </summary>
    internal static TermQuery? SingleTerm(string field, string text, Analyzer analyzer)
    {
        if (text.Length == 0 || text.Length > 64 || text is "AND" or "OR" or "NOT" or "TO")
            return null;
        foreach (char c in text)
            if (!char.IsAsciiLetterOrDigit(c))
                return null;
        using var tokens = analyzer.GetTokenStream(field, text);
        var termText = tokens.AddAttribute<Lucene.Net.Analysis.TokenAttributes.ICharTermAttribute>();
        tokens.Reset();
        string? only = null;
        while (tokens.IncrementToken())
        {
            if (only != null)
            {
                only = null;
                tokens.End();
                return null;
            }
            only = termText.ToString();
        }
        tokens.End();
        return only == null ? null : new TermQuery(new Lucene.Net.Index.Term(field, only));
    }

    /// <summary>True when one of <paramref name="values"/> (one document's text values of the field) matches.</summary>
    public bool Matches(IReadOnlyCollection<string> values)
    {
        if (values.Count == 0)
            return false;
        // The values one after the other, as an index field holds several values (no position gap).
        var index = new MemoryIndex();
        index.AddField(LooseField, string.Join(' ', values), _analyzer);
        return index.Search(Loose) > 0;
    }
}
