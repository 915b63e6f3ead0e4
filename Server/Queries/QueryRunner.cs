using System.Globalization;
using System.Text;
using System.Text.Json;
using RavenLite.Server.Documents;
using RavenLite.Server.Http;

namespace RavenLite.Server.Queries;

/// <summary>
/// Answers an <see cref="RqlQuery"/> by scanning the source collection in one storage snapshot
/// (read transaction): every document is parsed and the condition evaluated; matches are sorted,
/// projected, de-duplicated and paged. No index is involved (Lucene.Net is not available here, see
/// docs/dependencies.md), so a query costs O(documents in the collection) and is never stale.
/// Semantics (docs/http-api.md "Queries"): a field that holds an array matches when any element
/// does; numbers compare as numbers; strings compare case-insensitively (ordinal), like RavenDB's
/// default lower-cased terms; a missing field equals null; search() matches any analyzed term
/// (lower-cased words, * wildcards at either end).
/// Thread-safety: stateless; one call per query.
/// </summary>
public sealed class QueryRunner
{
    private readonly DocumentsStorage _storage;
    private readonly RqlQuery _query;
    private readonly JsonElement _parameters;
    private readonly Dictionary<RqlValue, JsonElement> _resolved = new(ReferenceEqualityComparer.Instance);

    private QueryRunner(DocumentsStorage storage, RqlQuery query, JsonElement parameters)
    {
        _storage = storage;
        _query = query;
        _parameters = parameters;
    }

    /// <summary>Runs <paramref name="query"/> with <paramref name="parameters"/> (an object, or undefined/null).</summary>
    /// <param name="storage">The database's documents.</param>
    /// <param name="query">The parsed query.</param>
    /// <param name="parameters">QueryParameters of the request.</param>
    /// <param name="defaultSkip">Start from the request body when the query has no limit clause.</param>
    /// <param name="defaultTake">PageSize from the request body when the query has no limit clause.</param>
    public static QueryAnswer Run(DocumentsStorage storage, RqlQuery query, JsonElement parameters, int? defaultSkip = null, int? defaultTake = null)
    {
        ArgumentNullException.ThrowIfNull(storage);
        ArgumentNullException.ThrowIfNull(query);
        return new QueryRunner(storage, query, parameters).Execute(defaultSkip, defaultTake);
    }

    private QueryAnswer Execute(int? defaultSkip, int? defaultTake)
    {
        if (_query.Source.Index is { } index)
            throw ApiException.NotFound("Raven.Client.Exceptions.Documents.Indexes.IndexDoesNotExistException", $"Index '{index}' does not exist (RavenLite answers collection queries by scanning; static indexes are not available).");
        int skip = _query.Skip != null ? ToInt(_query.Skip, "skip") : defaultSkip ?? 0;
        int take = _query.Take != null ? ToInt(_query.Take, "take") : defaultTake ?? int.MaxValue;
        if (skip < 0 || take < 0)
            throw ApiException.BadRequest("limit skip and take must not be negative.");
        var condition = _query.Where;
        if (condition != null)
            ResolveAll(condition); // a missing or mistyped parameter is a 400 even when nothing would be scanned
        var matches = new List<(StoredDocument Doc, JsonDocument Json)>();
        long total = 0;
        long lastEtag;
        bool needAll = _query.OrderBy.Count > 0 || _query.Distinct;
        try
        {
            using (var tx = _storage.Environment.ReadTransaction())
            {
                lastEtag = DocumentsStorage.LastEtag(tx);
                foreach (var doc in _storage.Scan(tx, _query.Source.AllDocs ? null : _query.Source.Collection))
                {
                    var json = JsonDocument.Parse(doc.Json);
                    bool keep = condition == null || Evaluate(condition, json.RootElement, doc);
                    if (keep)
                        total++;
                    if (keep && (needAll || matches.Count < (long)skip + take))
                        matches.Add((doc, json));
                    else
                        json.Dispose();
                }
            }
            if (_query.OrderBy.Count > 0)
                matches = Sort(matches);
            var results = new List<byte[]>();
            var seen = _query.Distinct ? new HashSet<string>(StringComparer.Ordinal) : null;
            int skipped = 0;
            long distinctTotal = 0;
            var included = new Dictionary<string, StoredDocument?>(StringComparer.OrdinalIgnoreCase);
            foreach (var (doc, json) in matches)
            {
                byte[] output = _query.Select.Count > 0 ? Project(doc, json.RootElement) : doc.Json;
                if (seen != null && !seen.Add(Encoding.UTF8.GetString(ProjectionKey(output))))
                    continue;
                distinctTotal++;
                if (skipped < skip)
                {
                    skipped++;
                    continue;
                }
                if (results.Count >= take)
                {
                    if (seen == null)
                        break;
                    continue;
                }
                results.Add(output);
                foreach (string path in _query.Include)
                {
                    var ids = new List<string>();
                    IncludePaths.Collect(json.RootElement, path, ids);
                    foreach (string id in ids)
                        included.TryAdd(id, null);
                }
            }
            if (included.Count > 0)
            {
                using var tx = _storage.Environment.ReadTransaction();
                foreach (string id in included.Keys.ToList())
                    included[id] = _storage.Get(tx, id);
            }
            return new QueryAnswer(results, seen != null ? distinctTotal : total, included, lastEtag,
                _query.Source.AllDocs ? "AllDocs" : "collection/" + _query.Source.Collection);
        }
        finally
        {
            foreach (var (_, json) in matches)
                json.Dispose();
        }
    }

    /// <summary>The projection without its @metadata, for distinct.</summary>
    private static byte[] ProjectionKey(byte[] output)
    {
        using var d = JsonDocument.Parse(output);
        var b = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(b))
        {
            w.WriteStartObject();
            foreach (var p in d.RootElement.EnumerateObject())
                if (p.Name != "@metadata")
                    p.WriteTo(w);
            w.WriteEndObject();
        }
        return b.WrittenSpan.ToArray();
    }

    private void ResolveAll(RqlExpression e)
    {
        switch (e)
        {
            case RqlBinary b:
                ResolveAll(b.Left);
                ResolveAll(b.Right);
                break;
            case RqlNot n:
                ResolveAll(n.Operand);
                break;
            case RqlCompare c:
                Resolve(c.Value);
                break;
            case RqlBetween bt:
                Resolve(bt.Low);
                Resolve(bt.High);
                break;
            case RqlIn i:
                foreach (var v in i.Values)
                    Resolve(v);
                break;
            case RqlMethod { Value: { } mv } m:
                if (Resolve(mv).ValueKind != JsonValueKind.String)
                    throw ApiException.BadRequest($"Invalid query at position {mv.Position}: {m.Name}() needs a string value.");
                break;
        }
    }

    private int ToInt(RqlValue v, string what)
    {
        var e = Resolve(v);
        if (e.ValueKind == JsonValueKind.Null)
            return what == "skip" ? 0 : int.MaxValue; // Node sends null for an unset skip
        if (e.ValueKind == JsonValueKind.Number && e.TryGetInt64(out long n))
            return (int)Math.Clamp(n, int.MinValue, int.MaxValue);
        throw ApiException.BadRequest($"Invalid query at position {v.Position}: limit {what} must be an integer, got {e.ValueKind}.");
    }

    /// <summary>The value of a literal or parameter, as JSON; computed once per query (not per scanned document).</summary>
    private JsonElement Resolve(RqlValue v)
    {
        if (!_resolved.TryGetValue(v, out var value))
            _resolved[v] = value = ResolveUncached(v);
        return value;
    }

    private JsonElement ResolveUncached(RqlValue v)
    {
        if (v.Parameter is { } name)
        {
            if (_parameters.ValueKind != JsonValueKind.Object || !_parameters.TryGetProperty(name, out var p))
                throw ApiException.BadRequest($"Invalid query at position {v.Position}: parameter ${name} has no value in QueryParameters.");
            return p;
        }
        return JsonSerializer.SerializeToElement(v.Literal);
    }

    private bool Evaluate(RqlExpression e, JsonElement doc, StoredDocument stored)
    {
        switch (e)
        {
            case RqlBinary b:
                return b.IsAnd ? Evaluate(b.Left, doc, stored) && Evaluate(b.Right, doc, stored) : Evaluate(b.Left, doc, stored) || Evaluate(b.Right, doc, stored);
            case RqlNot n:
                return !Evaluate(n.Operand, doc, stored);
            case RqlTrue:
                return true;
            case RqlCompare c:
            {
                var values = Values(doc, stored, c.Field);
                var target = Resolve(c.Value);
                if (c.Op == "=")
                    return EqualsAny(values, target);
                if (c.Op == "!=")
                    return !EqualsAny(values, target);
                foreach (var v in values)
                {
                    int? cmp = Compare(v, target);
                    if (cmp is { } r && c.Op switch { "<" => r < 0, "<=" => r <= 0, ">" => r > 0, _ => r >= 0 })
                        return true;
                }
                return false;
            }
            case RqlBetween bt:
            {
                var low = Resolve(bt.Low);
                var high = Resolve(bt.High);
                return Values(doc, stored, bt.Field).Any(v => Compare(v, low) >= 0 && Compare(v, high) <= 0);
            }
            case RqlIn i:
            {
                var values = Values(doc, stored, i.Field);
                foreach (var rv in i.Values)
                {
                    var target = Resolve(rv);
                    if (target.ValueKind == JsonValueKind.Array ? target.EnumerateArray().Any(t => EqualsAny(values, t)) : EqualsAny(values, target))
                        return true;
                }
                return false;
            }
            case RqlMethod m:
                return Method(m, doc, stored);
            default:
                throw new InvalidOperationException("unknown expression " + e);
        }
    }

    private bool Method(RqlMethod m, JsonElement doc, StoredDocument stored)
    {
        var values = Values(doc, stored, m.Field);
        if (m.Name == "exists")
            return values.Count > 0;
        var arg = Resolve(m.Value!);
        if (arg.ValueKind != JsonValueKind.String)
            throw ApiException.BadRequest($"Invalid query at position {m.Value!.Position}: {m.Name}() needs a string value.");
        string text = arg.GetString()!;
        switch (m.Name)
        {
            case "startswith":
                return values.Any(v => v.ValueKind == JsonValueKind.String && v.GetString()!.StartsWith(text, StringComparison.OrdinalIgnoreCase));
            case "endswith":
                return values.Any(v => v.ValueKind == JsonValueKind.String && v.GetString()!.EndsWith(text, StringComparison.OrdinalIgnoreCase));
            default:
                var terms = text.Split((char[]?)null, StringSplitOptions.RemoveEmptyEntries).Select(t => t.ToLowerInvariant()).ToList();
                if (terms.Count == 0)
                    return false;
                foreach (var v in values)
                {
                    if (v.ValueKind != JsonValueKind.String)
                        continue;
                    foreach (string token in Analyze(v.GetString()!))
                        if (terms.Any(t => TermMatches(t, token)))
                            return true;
                }
                return false;
        }
    }

    /// <summary>Full-text analysis: lower-cased runs of letters and digits.</summary>
    internal static IEnumerable<string> Analyze(string text)
    {
        int start = -1;
        for (int i = 0; i <= text.Length; i++)
        {
            bool word = i < text.Length && char.IsLetterOrDigit(text[i]);
            if (word && start < 0)
                start = i;
            else if (!word && start >= 0)
            {
                yield return text[start..i].ToLowerInvariant();
                start = -1;
            }
        }
    }

    private static bool TermMatches(string term, string token)
    {
        bool lead = term.StartsWith('*'), trail = term.EndsWith('*');
        string core = term.Trim('*');
        if (core.Length == 0)
            return true;
        return (lead, trail) switch
        {
            (true, true) => token.Contains(core, StringComparison.Ordinal),
            (false, true) => token.StartsWith(core, StringComparison.Ordinal),
            (true, false) => token.EndsWith(core, StringComparison.Ordinal),
            _ => token == core,
        };
    }

    private static bool EqualsAny(List<JsonElement> values, JsonElement target)
    {
        if (values.Count == 0)
            return target.ValueKind == JsonValueKind.Null;
        foreach (var v in values)
        {
            if (v.ValueKind == JsonValueKind.Null || target.ValueKind == JsonValueKind.Null)
            {
                if (v.ValueKind == target.ValueKind)
                    return true;
                continue;
            }
            if (Compare(v, target) == 0)
                return true;
        }
        return false;
    }

    /// <summary>Typed comparison, or null when the two are not comparable (a number against a string).</summary>
    private static int? Compare(JsonElement a, JsonElement b)
    {
        if (a.ValueKind == JsonValueKind.Number && b.ValueKind == JsonValueKind.Number)
        {
            if (a.TryGetDecimal(out decimal da) && b.TryGetDecimal(out decimal db))
                return da.CompareTo(db);
            return a.GetDouble().CompareTo(b.GetDouble());
        }
        if (a.ValueKind == JsonValueKind.String && b.ValueKind == JsonValueKind.String)
            return Math.Sign(string.Compare(a.GetString(), b.GetString(), StringComparison.OrdinalIgnoreCase));
        bool ab = a.ValueKind is JsonValueKind.True or JsonValueKind.False, bb = b.ValueKind is JsonValueKind.True or JsonValueKind.False;
        if (ab && bb)
            return a.GetBoolean().CompareTo(b.GetBoolean());
        return null;
    }

    /// <summary>The values <paramref name="path"/> reaches: arrays on the way (and at the end) are flattened; missing → none.</summary>
    private static List<JsonElement> Values(JsonElement doc, StoredDocument stored, RqlPath path)
    {
        var result = new List<JsonElement>();
        if (path.IsId)
        {
            result.Add(JsonSerializer.SerializeToElement(stored.Id));
            return result;
        }
        Walk(doc, path.Parts, 0, result);
        return result;
    }

    private static void Walk(JsonElement node, IReadOnlyList<string> parts, int index, List<JsonElement> result)
    {
        if (node.ValueKind == JsonValueKind.Array)
        {
            foreach (var e in node.EnumerateArray())
                Walk(e, parts, index, result);
            return;
        }
        if (index == parts.Count)
        {
            result.Add(node);
            return;
        }
        if (node.ValueKind == JsonValueKind.Object && node.TryGetProperty(parts[index], out var child))
            Walk(child, parts, index + 1, result);
    }

    private byte[] Project(StoredDocument doc, JsonElement root)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            foreach (var f in _query.Select)
            {
                w.WritePropertyName(f.Alias);
                if (f.Path.IsId)
                {
                    w.WriteStringValue(doc.Id);
                    continue;
                }
                var values = new List<JsonElement>();
                Walk(root, f.Path.Parts, 0, values);
                bool throughArray = PassesArray(root, f.Path.Parts);
                if (values.Count == 0)
                    w.WriteNullValue();
                else if (values.Count == 1 && !throughArray)
                    values[0].WriteTo(w);
                else
                {
                    w.WriteStartArray();
                    foreach (var v in values)
                        v.WriteTo(w);
                    w.WriteEndArray();
                }
            }
            w.WriteStartObject("@metadata");
            w.WriteBoolean("@projection", true);
            w.WriteString("@id", doc.Id);
            w.WriteString("@change-vector", doc.ChangeVector);
            w.WriteString("@collection", doc.Collection);
            w.WriteString("@last-modified", JsonResponse.FormatDate(doc.LastModified));
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    private static bool PassesArray(JsonElement node, IReadOnlyList<string> parts)
    {
        for (int i = 0; i < parts.Count; i++)
        {
            if (node.ValueKind == JsonValueKind.Array)
                return true;
            if (node.ValueKind != JsonValueKind.Object || !node.TryGetProperty(parts[i], out node))
                return false;
        }
        return false;
    }

    private List<(StoredDocument Doc, JsonDocument Json)> Sort(List<(StoredDocument Doc, JsonDocument Json)> matches)
    {
        IOrderedEnumerable<(StoredDocument Doc, JsonDocument Json)>? ordered = null;
        foreach (var key in _query.OrderBy)
        {
            Func<(StoredDocument Doc, JsonDocument Json), SortKey> selector;
            if (key.Type == RqlOrderType.Random)
            {
                var rnd = key.RandomSeed is { } seed ? new Random(StableHash(seed)) : new Random();
                var randomKeys = matches.ToDictionary(m => m.Doc.Id, _ => rnd.NextDouble(), StringComparer.OrdinalIgnoreCase);
                selector = m => new SortKey(1, randomKeys[m.Doc.Id], null);
            }
            else
            {
                selector = m => KeyOf(m, key);
            }
            ordered = ordered == null
                ? (key.Descending ? matches.OrderByDescending(selector, SortKeyComparer.Instance) : matches.OrderBy(selector, SortKeyComparer.Instance))
                : (key.Descending ? ordered.ThenByDescending(selector, SortKeyComparer.Instance) : ordered.ThenBy(selector, SortKeyComparer.Instance));
        }
        return ordered!.ToList(); // stable: ties keep etag order
    }

    private static int StableHash(string s)
    {
        int h = 17;
        foreach (char c in s)
            h = unchecked(h * 31 + c);
        return h;
    }

    private static SortKey KeyOf((StoredDocument Doc, JsonDocument Json) m, RqlOrder key)
    {
        var values = Values(m.Json.RootElement, m.Doc, key.Field!);
        if (values.Count == 0 || values[0].ValueKind == JsonValueKind.Null)
            return new SortKey(0, 0, null);
        var v = values[0];
        switch (key.Type)
        {
            case RqlOrderType.Long or RqlOrderType.Double:
                if (v.ValueKind == JsonValueKind.Number)
                    return new SortKey(1, v.GetDouble(), null);
                if (v.ValueKind == JsonValueKind.String && double.TryParse(v.GetString(), NumberStyles.Float, CultureInfo.InvariantCulture, out double d))
                    return new SortKey(1, d, null);
                return new SortKey(0, 0, null);
            case RqlOrderType.AlphaNumeric:
                return new SortKey(2, 0, v.ValueKind == JsonValueKind.String ? v.GetString() : v.GetRawText()) { Natural = true };
            case RqlOrderType.String:
                return new SortKey(2, 0, v.ValueKind == JsonValueKind.String ? v.GetString() : v.GetRawText());
            default:
                return v.ValueKind switch
                {
                    JsonValueKind.Number => new SortKey(1, v.GetDouble(), null),
                    JsonValueKind.String => new SortKey(2, 0, v.GetString()),
                    JsonValueKind.True => new SortKey(1, 1, null),
                    JsonValueKind.False => new SortKey(1, 0, null),
                    _ => new SortKey(2, 0, v.GetRawText()),
                };
        }
    }

    /// <summary>An order-by key: rank (missing 0, number 1, text 2), then number or text.</summary>
    private sealed record SortKey(int Rank, double Number, string? Text)
    {
        public bool Natural { get; init; }
    }

    private sealed class SortKeyComparer : IComparer<SortKey>
    {
        public static readonly SortKeyComparer Instance = new();

        public int Compare(SortKey? x, SortKey? y)
        {
            if (x!.Rank != y!.Rank)
                return x.Rank.CompareTo(y.Rank);
            if (x.Rank == 1)
                return x.Number.CompareTo(y.Number);
            if (x.Rank == 0)
                return 0;
            return x.Natural ? NaturalCompare(x.Text!, y.Text!) : string.Compare(x.Text, y.Text, StringComparison.OrdinalIgnoreCase);
        }

        /// <summary>alphaNumeric: runs of digits compare by value (file2 &lt; file10), the rest case-insensitively.</summary>
        private static int NaturalCompare(string a, string b)
        {
            int i = 0, j = 0;
            while (i < a.Length && j < b.Length)
            {
                if (char.IsDigit(a[i]) && char.IsDigit(b[j]))
                {
                    int si = i, sj = j;
                    while (i < a.Length && char.IsDigit(a[i]))
                        i++;
                    while (j < b.Length && char.IsDigit(b[j]))
                        j++;
                    string na = a[si..i].TrimStart('0'), nb = b[sj..j].TrimStart('0');
                    int c = na.Length != nb.Length ? na.Length.CompareTo(nb.Length) : string.CompareOrdinal(na, nb);
                    if (c != 0)
                        return c;
                    continue;
                }
                int d = char.ToLowerInvariant(a[i]).CompareTo(char.ToLowerInvariant(b[j]));
                if (d != 0)
                    return d;
                i++;
                j++;
            }
            return (a.Length - i).CompareTo(b.Length - j);
        }
    }
}

/// <summary>A query's answer: result JSON (whole documents or projections, each with @metadata), the match count, included documents, the etag it saw and the source's name.</summary>
public sealed record QueryAnswer(IReadOnlyList<byte[]> Results, long TotalResults, IReadOnlyDictionary<string, StoredDocument?> Includes, long ResultEtag, string IndexName);
