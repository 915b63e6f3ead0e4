using Lucene.Net.Analysis;
using Lucene.Net.Search.Highlight;
using RavenLite.Server.Indexing;

namespace RavenLite.Server.Queries;

/// <summary>
/// <c>include highlight(field, fragmentLength, fragmentCount[, $options])</c> (Lucene.Net.Highlighter): for each
/// answered document, the best fragments of the field's text around the words the query's <c>search()</c> on
/// that field matched, each matched word wrapped in a pre/post tag pair. The text is the field's values as the
/// index entry holds them (or the document's, for a scan), analyzed again with the field's analyzer, so no
/// term vectors or stored fields are needed. Tags (options <c>PreTags</c>/<c>PostTags</c>) go to matched words
/// in turn by first appearance, as RavenDB's colored tags; the default is RavenDB's
/// <c>&lt;b style="background:yellow"&gt;</c> ... <c>&lt;/b&gt;</c> series. Output as RavenDB's
/// <c>Highlightings</c>: <c>{field: {document id (or the GroupKey field's value): [fragments]}}</c>; a field no
/// search() queried gets no fragments. One instance per query; not thread-safe.
/// </summary>
internal sealed class HighlightCollector
{
    /// <summary>RavenDB's default pre-tags (one color per matched word, in turn); the post-tag is <c>&lt;/b&gt;</c>.</summary>
    private static readonly string[] DefaultPreTags = [.. new[]
    {
        "yellow", "lawngreen", "aquamarine", "magenta", "palegreen", "coral", "wheat", "khaki", "lime", "deepskyblue",
        "deeppink", "salmon", "peachpuff", "violet", "mediumpurple", "palegoldenrod", "darkkhaki", "springgreen", "turquoise", "powderblue",
    }.Select(c => $"<b style=\"background:{c}\">")];

    private readonly List<Field> _fields = [];

    private sealed class Field
    {
        public required RqlHighlight Request;
        public required Highlighter? Highlighter;
        public required Analyzer Analyzer;
        public required int FragmentCount;
        public string? GroupKey;
        public TagFormatter? Formatter;
        public readonly Dictionary<string, List<string>> Fragments = new(StringComparer.Ordinal);
    }

    /// <param name="highlights">The query's highlight() requests.</param>
    /// <param name="resolve">Resolves a query value.</param>
    /// <param name="searchOn">The loose (single-field) Lucene query of the query's search() calls on a field, or null when none.</param>
    /// <param name="analyzerOf">The analyzer of a field's text.</param>
    public HighlightCollector(IReadOnlyList<RqlHighlight> highlights, Func<RqlValue, JsonElement> resolve, Func<RqlPath, Lucene.Net.Search.Query?> searchOn, Func<RqlPath, Analyzer> analyzerOf)
    {
        foreach (var h in highlights)
        {
            int length = Int(resolve(h.FragmentLength), h.FragmentLength.Position, "fragment length", 18);
            int count = Int(resolve(h.FragmentCount), h.FragmentCount.Position, "fragment count", 1);
            string[] pre = DefaultPreTags, post = ["</b>"];
            string? groupKey = null;
            if (h.Options != null && resolve(h.Options) is { ValueKind: JsonValueKind.Object } o)
            {
                pre = Tags(o, "PreTags", h.Options.Position) ?? pre;
                post = Tags(o, "PostTags", h.Options.Position) ?? post;
                groupKey = JsonPaths.PropertyIgnoringCase(o, "GroupKey") is { ValueKind: JsonValueKind.String } g ? g.GetString() : null;
            }
            else if (h.Options != null && resolve(h.Options).ValueKind is not (JsonValueKind.Null or JsonValueKind.Undefined))
            {
                throw new InvalidQueryException($"Invalid query at position {h.Options.Position}: highlight() options must be an object (PreTags, PostTags, GroupKey).");
            }
            var query = searchOn(h.Field);
            Highlighter? highlighter = null;
            TagFormatter? formatter = null;
            if (query != null)
            {
                formatter = new TagFormatter(pre, post);
                var scorer = new QueryScorer(query, SearchQuery.LooseField);
                highlighter = new Highlighter(formatter, scorer) { TextFragmenter = new SimpleSpanFragmenter(scorer, length) };
            }
            _fields.Add(new Field { Request = h, Highlighter = highlighter, Analyzer = analyzerOf(h.Field), FragmentCount = count, GroupKey = groupKey, Formatter = formatter });
        }
    }

    private static int Int(JsonElement v, int position, string what, int least)
    {
        if (v.ValueKind == JsonValueKind.Number && v.TryGetInt32(out int n) && n >= least)
            return n;
        throw new InvalidQueryException($"Invalid query at position {position}: highlight() {what} must be a whole number of at least {least}.");
    }

    private static string[]? Tags(JsonElement o, string name, int position)
    {
        if (JsonPaths.PropertyIgnoringCase(o, name) is not { ValueKind: not JsonValueKind.Null } v)
            return null;
        if (v.ValueKind != JsonValueKind.Array || v.GetArrayLength() == 0 || v.EnumerateArray().Any(t => t.ValueKind != JsonValueKind.String))
            throw new InvalidQueryException($"Invalid query at position {position}: highlight() option {name} must be a non-empty array of strings.");
        return v.EnumerateArray().Select(t => t.GetString()!).ToArray();
    }

    /// <summary>Highlights one answered row (its document id, or its GroupKey value).</summary>
    public void Add(Row row, string documentId)
    {
        foreach (var f in _fields)
        {
            if (f.Highlighter == null)
                continue;
            string key = documentId;
            if (f.GroupKey != null && row.Values(new RqlPath(f.GroupKey.Split('.'), false)) is [{ ValueKind: JsonValueKind.String } k, ..])
                key = k.GetString()!;
            var fragments = new List<string>();
            foreach (var v in row.Values(f.Request.Field))
            {
                if (v.ValueKind != JsonValueKind.String || fragments.Count >= f.FragmentCount)
                    continue;
                string text = v.GetString()!;
                using var tokens = f.Analyzer.GetTokenStream(SearchQuery.LooseField, text);
                f.Highlighter.MaxDocCharsToAnalyze = Math.Max(text.Length, 1);
                foreach (string fragment in f.Highlighter.GetBestFragments(tokens, text, f.FragmentCount - fragments.Count))
                    fragments.Add(fragment);
            }
            if (fragments.Count > 0)
                f.Fragments[key] = fragments;
        }
    }

    /// <summary>Writes RavenDB's <c>Highlightings</c> object.</summary>
    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject("Highlightings");
        foreach (var f in _fields)
        {
            w.WriteStartObject(f.Request.Field.ToString());
            foreach (var (key, fragments) in f.Fragments)
            {
                w.WriteStartArray(key);
                foreach (string fragment in fragments)
                    w.WriteStringValue(fragment);
                w.WriteEndArray();
            }
            w.WriteEndObject();
        }
        w.WriteEndObject();
    }

    /// <summary>Wraps each matched word in its tag pair: words get the tags in turn, by first appearance in the answer.</summary>
    private sealed class TagFormatter(string[] pre, string[] post) : IFormatter
    {
        private readonly Dictionary<string, int> _words = new(StringComparer.OrdinalIgnoreCase);

        public string HighlightTerm(string originalText, TokenGroup tokenGroup)
        {
            if (tokenGroup.TotalScore <= 0)
                return originalText;
            if (!_words.TryGetValue(originalText, out int i))
                _words[originalText] = i = _words.Count;
            return pre[i % pre.Length] + originalText + post[i % post.Length];
        }
    }
}
