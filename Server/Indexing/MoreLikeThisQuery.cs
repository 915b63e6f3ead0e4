using Lucene.Net.Analysis;
using Lucene.Net.Analysis.Util;
using Lucene.Net.Index;
using Lucene.Net.Queries.Mlt;
using Lucene.Net.Search;
using Lucene.Net.Util;

namespace RavenLite.Server.Indexing;

/// <summary>
/// <c>moreLikeThis(..)</c> as a Lucene query (Lucene.Net.Queries' MoreLikeThis): from a source entry (the mapped
/// values of a document, or an artificial document's fields), each chosen field's most interesting terms —
/// frequent in the source, rare in the index (tf·idf) — OR'ed together, the source document itself excluded.
/// A Search field contributes its analyzed words (field <c>s{id}</c>, the field's analyzer); any other field its
/// whole lower-cased values (its text terms in <see cref="IndexKeys.TermsField"/>). Options as RavenDB's
/// MoreLikeThisOptions (defaults as RavenDB/Lucene): Fields (all the source's fields), MinimumTermFrequency
/// (2), MinimumDocumentFrequency (5), MaximumDocumentFrequency / MaximumDocumentFrequencyPercentage (none),
/// MaximumQueryTerms (25, per field), MinimumWordLength / MaximumWordLength (0 = no bound; for whole-value
/// fields the length counts the term's field prefix), MaximumNumberOfTokensParsed (5000), Boost /
/// BoostFactor (false / 1), and stop words. Thread-safe (no state).
/// </summary>
internal static class MoreLikeThisQuery
{
    /// <summary>Separates one field's values in the text given to the whole-value analyzer.</summary>
    private const char ValueSeparator = '\u001F';

    /// <summary>The query, or null when the source gives no interesting term (nothing is like it).</summary>
    /// <param name="reader">The index snapshot (document frequencies).</param>
    /// <param name="index">The index.</param>
    /// <param name="entry">The source: an object of field → value or array of values.</param>
    /// <param name="excludeLowerId">The source document's lower-cased id, or null (an artificial document).</param>
    /// <param name="options">MoreLikeThisOptions, or undefined/null.</param>
    /// <param name="stopWords">Words never used, or null.</param>
    /// <param name="position">Where moreLikeThis() is in the query (for errors).</param>
    public static Query? Build(IndexReader reader, CompiledIndex index, JsonElement entry, string? excludeLowerId, JsonElement options, ISet<string>? stopWords, int position)
    {
        string Bad(string what) => $"Invalid query at position {position}: moreLikeThis() {what}";
        if (options.ValueKind is not (JsonValueKind.Undefined or JsonValueKind.Null or JsonValueKind.Object))
            throw new InvalidQueryException(Bad("options must be an object."));
        int Int(string name, int fallback)
        {
            if (Queries.JsonPaths.PropertyIgnoringCase(options, name) is not { ValueKind: not JsonValueKind.Null } v)
                return fallback;
            if (v.ValueKind == JsonValueKind.Number && v.TryGetInt32(out int n) && n >= 0)
                return n;
            throw new InvalidQueryException(Bad($"option {name} must be a whole number of 0 or more."));
        }
        var fields = new List<IndexField>();
        if (Queries.JsonPaths.PropertyIgnoringCase(options, "Fields") is { ValueKind: JsonValueKind.Array } named)
        {
            foreach (var f in named.EnumerateArray())
            {
                string name = f.ValueKind == JsonValueKind.String ? f.GetString()! : throw new InvalidQueryException(Bad("option Fields must list field names."));
                fields.Add(index.Field(name) ?? throw new InvalidQueryException(Bad($"field '{name}' is not a field of the index; its fields are: {string.Join(", ", index.Fields.Select(x => x.Name))}.")));
            }
        }
        else
        {
            fields.AddRange(index.Fields);
        }
        var mlt = new MoreLikeThis(reader)
        {
            MinTermFreq = Int("MinimumTermFrequency", 2),
            MinDocFreq = Int("MinimumDocumentFrequency", 5),
            MaxQueryTerms = Int("MaximumQueryTerms", 25),
            MinWordLen = Int("MinimumWordLength", 0),
            MaxWordLen = Int("MaximumWordLength", 0),
            MaxNumTokensParsed = Int("MaximumNumberOfTokensParsed", 5000),
            ApplyBoost = Queries.JsonPaths.PropertyIgnoringCase(options, "Boost") is { ValueKind: JsonValueKind.True },
            StopWords = stopWords,
        };
        if (Queries.JsonPaths.PropertyIgnoringCase(options, "MaximumDocumentFrequency") is { ValueKind: JsonValueKind.Number })
            mlt.MaxDocFreq = Int("MaximumDocumentFrequency", int.MaxValue);
        if (Queries.JsonPaths.PropertyIgnoringCase(options, "MaximumDocumentFrequencyPercentage") is { ValueKind: JsonValueKind.Number })
            mlt.SetMaxDocFreqPct(Int("MaximumDocumentFrequencyPercentage", 100));
        if (Queries.JsonPaths.PropertyIgnoringCase(options, "BoostFactor") is { ValueKind: JsonValueKind.Number } bf)
            mlt.BoostFactor = bf.GetSingle();

        var query = new BooleanQuery();
        foreach (var field in fields)
        {
            if (Values(entry, field.Name) is not { Count: > 0 } values)
                continue;
            Query? part;
            if (field.Indexing == FieldIndexing.Search)
            {
                string luceneField = SearchQuery.FieldName(field.Id);
                mlt.Analyzer = field.TextAnalyzer;
                mlt.FieldNames = [luceneField];
                part = mlt.Like(new StringReader(string.Join(' ', values)), luceneField);
            }
            else
            {
                var terms = values.Select(v => IndexKeys.TermText(IndexKeys.FieldName(field.Id, IndexKeys.Text), IndexKeys.TextTerm(v)));
                mlt.Analyzer = ValuesAnalyzer.Instance;
                mlt.FieldNames = [IndexKeys.TermsField];
                part = mlt.Like(new StringReader(string.Join(ValueSeparator, terms)), IndexKeys.TermsField);
            }
            if (part is BooleanQuery { Clauses.Count: > 0 } b)
                foreach (var clause in b.Clauses)
                    query.Add(clause);
        }
        if (query.Clauses.Count == 0)
            return null;
        if (excludeLowerId != null)
            query.Add(new TermQuery(new Term(Index.IdField, excludeLowerId)), Occur.MUST_NOT);
        return query;
    }

    /// <summary>
    /// The string values of a field in the source (a value or an array of values): the property of the field's name, else
    /// (an artificial document, written by the client in its own casing and shape) the first property whose name, any
    /// case, is the field's — at the top level or nested, by its leaf name or its path joined with <c>.</c> or <c>_</c>
    /// (<c>{"Property":{"Body":"x"}}</c> gives fields Body, Property.Body and Property_Body).
    /// </summary>
    private static List<string> Values(JsonElement entry, string field)
    {
        var result = new List<string>();
        if (entry.ValueKind != JsonValueKind.Object)
            return result;
        if (!entry.TryGetProperty(field, out var v))
        {
            if (Find(entry, field, "") is not { } found)
                return result;
            v = found;
        }
        foreach (var x in v.ValueKind == JsonValueKind.Array ? v.EnumerateArray().ToList() : [v])
            if (x.ValueKind == JsonValueKind.String)
                result.Add(x.GetString()!);
            else if (x.ValueKind == JsonValueKind.Number)
                result.Add(x.GetRawText());
        return result;
    }

    private static JsonElement? Find(JsonElement node, string field, string prefix)
    {
        foreach (var p in node.EnumerateObject())
        {
            string path = prefix + p.Name;
            if (p.Name.Equals(field, StringComparison.OrdinalIgnoreCase) || path.Equals(field, StringComparison.OrdinalIgnoreCase)
                || path.Replace('.', '_').Equals(field, StringComparison.OrdinalIgnoreCase))
                return p.Value;
            if (p.Value.ValueKind == JsonValueKind.Object && Find(p.Value, field, path + ".") is { } nested)
                return nested;
        }
        return null;
    }


    /// <summary>Whole values as tokens: the text split at <see cref="ValueSeparator"/>, nothing else changed.</summary>
    private sealed class ValuesAnalyzer : Analyzer
    {
        public static readonly ValuesAnalyzer Instance = new();

        protected override TokenStreamComponents CreateComponents(string fieldName, TextReader reader) =>
            new(new ValuesTokenizer(reader));

        private sealed class ValuesTokenizer(TextReader reader) : CharTokenizer(LuceneVersion.LUCENE_48, reader)
        {
            protected override bool IsTokenChar(int c) => c != ValueSeparator;
        }
    }
}
