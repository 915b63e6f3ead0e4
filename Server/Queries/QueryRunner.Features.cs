using RavenLite.Server.Documents;
using RavenLite.Server.Indexing;

namespace RavenLite.Server.Queries;

/// <summary>The query features of <see cref="QueryRunner"/> beyond matching: suggestions, MoreLikeThis, highlighting's search, spatial shapes, facet terms, regex().</summary>
public sealed partial class QueryRunner
{
    /// <summary>
    /// <c>select suggest(..)</c>: for each, RavenDB's SuggestionResult <c>{Name, Suggestions: [..]}</c> from the
    /// index's terms of the field (<see cref="Suggester"/>).
    /// </summary>
    private QueryAnswer Suggest(Indexing.Index? index)
    {
        if (index == null)
            throw new InvalidQueryException("suggest() reads an index's terms: query an index or a collection, not @all_docs or id().");
        var requests = _query.Suggestions.Select(s => (s, Words: SuggestWords(s), Options: SuggestOptionsOf(s))).ToList();
        var snapshot = index.AcquireSnapshot();
        try
        {
            var results = new List<byte[]>();
            foreach (var (s, words, options) in requests)
            {
                var field = index.Compiled.Field(s.Field.ToString())!;
                var suggestions = Suggester.Suggest(snapshot.Reader, field, words, options);
                results.Add(JsonSerializer.SerializeToUtf8Bytes(new Dictionary<string, object> { ["Name"] = s.Alias ?? s.Field.ToString(), ["Suggestions"] = suggestions }));
            }
            long lastEtag;
            bool stale;
            using (var dbTx = _db.Environment.ReadTransaction())
            {
                lastEtag = DocumentsStorage.LastEtag(dbTx);
                stale = Indexing.Index.IsBehind(snapshot.Position, index.TargetOf(dbTx));
            }
            return new QueryAnswer(results.ConvertAll(r => (ResultJson)r), results.Count, new Dictionary<string, StoredDocument?>(), lastEtag, index.Name, stale, index.LastIndexingTime);
        }
        finally
        {
            Indexing.Index.ReleaseSnapshot(snapshot);
        }
    }

    private List<string> SuggestWords(RqlSuggest s)
    {
        var v = Resolve(s.Term);
        if (v.ValueKind == JsonValueKind.String)
            return [v.GetString()!];
        if (v.ValueKind == JsonValueKind.Array && v.GetArrayLength() > 0 && v.EnumerateArray().All(x => x.ValueKind == JsonValueKind.String))
            return v.EnumerateArray().Select(x => x.GetString()!).ToList();
        throw new InvalidQueryException($"Invalid query at position {s.Term.Position}: suggest() needs a word or an array of words.");
    }

    private SuggestOptions SuggestOptionsOf(RqlSuggest s)
    {
        if (s.Options == null || Resolve(s.Options) is { ValueKind: JsonValueKind.Null })
            return SuggestOptions.Default;
        var o = Resolve(s.Options);
        string Bad(string what) => $"Invalid query at position {s.Options.Position}: suggest() options {what}";
        if (o.ValueKind != JsonValueKind.Object)
            throw new InvalidQueryException(Bad("must be an object (PageSize, Distance, Accuracy, SortMode)."));
        var d = SuggestOptions.Default;
        int pageSize = JsonPaths.PropertyIgnoringCase(o, "PageSize") is { ValueKind: JsonValueKind.Number } p && p.TryGetInt32(out int n) && n >= 0 ? n
            : JsonPaths.PropertyIgnoringCase(o, "PageSize") is { ValueKind: not JsonValueKind.Null } ? throw new InvalidQueryException(Bad("PageSize must be a whole number of 0 or more.")) : d.PageSize;
        string distance = JsonPaths.PropertyIgnoringCase(o, "Distance") is { ValueKind: JsonValueKind.String } ds ? ds.GetString()! : "Levenshtein";
        distance = distance switch
        {
            "None" or "Default" or "Levenshtein" => "Levenshtein",
            "JaroWinkler" or "NGram" => distance,
            _ => throw new InvalidQueryException(Bad($"Distance '{distance}' is unknown (Levenshtein, JaroWinkler, NGram).")),
        };
        float accuracy = JsonPaths.PropertyIgnoringCase(o, "Accuracy") is { ValueKind: JsonValueKind.Number } a ? a.GetSingle() : d.Accuracy;
        if (accuracy is < 0 or > 1)
            throw new InvalidQueryException(Bad("Accuracy must be between 0 and 1."));
        string sort = JsonPaths.PropertyIgnoringCase(o, "SortMode") is { ValueKind: JsonValueKind.String } sm ? sm.GetString()! : "Popularity";
        if (sort is not ("Popularity" or "None"))
            throw new InvalidQueryException(Bad($"SortMode '{sort}' is unknown (Popularity, None)."));
        return new SuggestOptions(pageSize, distance, accuracy, sort == "Popularity");
    }

    /// <summary>The Lucene query of each moreLikeThis() in the where clause (null: nothing is like its source).</summary>
    private Dictionary<RqlMoreLikeThis, Lucene.Net.Search.Query?>? MoreLikeThisQueries(CompiledIndex compiled, Lucene.Net.Index.IndexReader reader, Storage.Transactions.Transaction dbTx)
    {
        Dictionary<RqlMoreLikeThis, Lucene.Net.Search.Query?>? result = null;
        foreach (var m in Find<RqlMoreLikeThis>(_query.Where))
        {
            result ??= new(ReferenceEqualityComparer.Instance);
            var options = m.Options == null ? default : Resolve(m.Options);
            ISet<string>? stopWords = null;
            if (JsonPaths.PropertyIgnoringCase(options, "StopWordsDocumentId") is { ValueKind: JsonValueKind.String } sw)
            {
                var list = _db.Documents.Get(dbTx, sw.GetString()!) is { } swDoc ? JsonDocument.Parse(swDoc.Json).RootElement : default;
                if (JsonPaths.PropertyIgnoringCase(list, "StopWords") is not { ValueKind: JsonValueKind.Array } words)
                    throw new InvalidQueryException($"Invalid query at position {m.Position}: moreLikeThis() stop words document '{sw.GetString()}' does not exist or has no StopWords array.");
                stopWords = new HashSet<string>(words.EnumerateArray().Where(w => w.ValueKind == JsonValueKind.String).Select(w => w.GetString()!.ToLowerInvariant()));
            }
            JsonElement source;
            string? exclude = null;
            if (m.Document != null)
            {
                var given = Resolve(m.Document);
                try
                {
                    source = given.ValueKind == JsonValueKind.String ? JsonDocument.Parse(given.GetString()!).RootElement : given;
                }
                catch (JsonException e)
                {
                    throw new InvalidQueryException($"Invalid query at position {m.Position}: moreLikeThis() document is not valid JSON: {e.Message}");
                }
                if (source.ValueKind != JsonValueKind.Object)
                    throw new InvalidQueryException($"Invalid query at position {m.Position}: moreLikeThis() document must be a JSON object.");
            }
            else if (m.Source is RqlCompare { Field.IsId: true, Op: "=" } byId && Resolve(byId.Value) is { ValueKind: JsonValueKind.String } idValue)
            {
                var doc = _db.Documents.Get(dbTx, idValue.GetString()!);
                if (doc == null || !compiled.Collections.Contains(doc.Collection, StringComparer.OrdinalIgnoreCase))
                {
                    result[m] = null; // no such document in the index: nothing is like it
                    continue;
                }
                using var parsed = JsonDocument.Parse(doc.Json);
                source = JsonDocument.Parse(compiled.EntryOrEmpty(parsed.RootElement, doc.Collection, doc.Id, Indexing.DocumentLoaders.From(_db.Documents, dbTx))).RootElement;
                exclude = doc.Id.ToLowerInvariant();
            }
            else
            {
                throw new InvalidQueryException($"Invalid query at position {m.Position}: moreLikeThis() takes id() = 'document id', or a document as JSON text ($parameter).");
            }
            result[m] = MoreLikeThisQuery.Build(reader, compiled, source, exclude, options, stopWords, m.Position);
        }
        return result;
    }

    /// <summary>The query's search() calls on <paramref name="path"/> as one query over loose text (any of them), or null.</summary>
    private Lucene.Net.Search.BooleanQuery? SearchOn(RqlPath path)
    {
        var searches = new List<RqlMethod>();
        void Collect(RqlExpression? e)
        {
            if (e is RqlMethod { IsSearch: true } m && m.Field.Text == path.Text)
                searches.Add(m);
            else if (e is not (RqlNot or null))
                foreach (var child in e.Children)
                    Collect(child);
        }
        Collect(_query.Where);
        if (searches.Count == 0)
            return null;
        var query = new Lucene.Net.Search.BooleanQuery();
        foreach (var m in searches)
            query.Add(SearchQuery.Parse(Resolve(m.Value!).GetString()!, null, m.Value!.Position, m.AllTerms, AnalyzerOf(path)).Loose, Lucene.Net.Search.Occur.SHOULD);
        return query;
    }

    private Lucene.Net.Analysis.Analyzer AnalyzerOf(RqlPath path) =>
        (path.IsId ? null : _compiled?.Field(path.ToString())?.TextAnalyzer) ?? SearchAnalyzer.Instance;

    private readonly Dictionary<(RqlShape Shape, GeoPlane? Plane, bool Miles), GeoShape> _shapes = [];

    /// <summary>True when a spatial target's circle radii and distances are in miles (its index field says so).</summary>
    private bool Miles(RqlSpatialTarget target) => SpatialField(target)?.Miles == true;

    /// <summary>The index field a spatial target names, or null (a document's point or WKT, or no index).</summary>
    private IndexField? SpatialField(RqlSpatialTarget target) => target.Field != null ? _compiled?.Field(target.Field.ToString()) : null;

    /// <summary>A Cartesian field's plane (its shapes' and queries' coordinates are x and y on it), or null.</summary>
    private GeoPlane? PlaneOf(RqlSpatialTarget target) => SpatialField(target)?.Plane;

    /// <summary>The distance between two points of <paramref name="target"/>: in its units (kilometres, miles, or its plane's).</summary>
    private double DistanceBetween(RqlSpatialTarget target, GeoPoint a, GeoPoint b) =>
        GeoShape.Distance(a, b, PlaneOf(target)) / (Miles(target) ? GeoShape.KmPerMile : 1);

    /// <summary>The coordinates a stored point is answered with: latitude and longitude, or, on a plane, y and x.</summary>
    private (double Lat, double Lng) Answered(RqlSpatialTarget target, GeoPoint p)
    {
        if (PlaneOf(target) is not { } plane)
            return (p.Lat, p.Lng);
        var (x, y) = plane.ToPlane(p.Lat, p.Lng);
        return (y, x);
    }

    /// <summary>A query shape for <paramref name="target"/> (computed once per query); 400 naming it when it is not one.</summary>
    /// <param name="s">The shape.</param>
    /// <param name="target">What it is compared with (its field's units and plane).</param>
    /// <param name="checkOnly">Before the index is known (a field's plane is not): the shape is checked for well-formed WKT in any plane.</param>
    private GeoShape ShapeOf(RqlShape s, RqlSpatialTarget target, bool checkOnly = false)
    {
        bool miles = Miles(target);
        var plane = checkOnly && target.Field != null && _compiled == null ? GeoPlane.Unbounded : PlaneOf(target);
        if (_shapes.TryGetValue((s, plane, miles), out var known))
            return known;
        string Bad(string what) => $"Invalid query at position {s.Position}: spatial.{s.Kind}() {what}";
        double Number(RqlValue v, string what) => Resolve(v) is { ValueKind: JsonValueKind.Number } n ? n.GetDouble()
            : throw new InvalidQueryException(Bad($"needs a number for its {what}, got {Resolve(v).GetRawText()}."));
        GeoShape shape;
        switch (s.Kind)
        {
            case "circle":
            {
                double radius = Number(s.Args[0], "radius"), lat = Number(s.Args[1], "latitude"), lng = Number(s.Args[2], "longitude");
                if (s.Args.Count > 3)
                {
                    miles = Resolve(s.Args[3]) is { ValueKind: JsonValueKind.String } u ? u.GetString() switch
                    {
                        "Miles" => true,
                        "Kilometers" => false,
                        var other => throw new InvalidQueryException(Bad($"units '{other}' are unknown (Kilometers, Miles).")),
                    } : throw new InvalidQueryException(Bad("units must be 'Kilometers' or 'Miles'."));
                }
                if (!(radius >= 0) || !double.IsFinite(radius))
                    throw new InvalidQueryException(Bad($"radius {radius} must be 0 or more."));
                var center = PointOf(lat, lng) ?? throw new InvalidQueryException(Bad(plane == null
                    ? $"centre ({lat}, {lng}) is not a latitude (-90..90) and a longitude (-180..180)."
                    : $"centre (y {lat}, x {lng}) is outside the field's plane ({plane.MinX}..{plane.MaxX}, {plane.MinY}..{plane.MaxY})."));
                shape = new GeoCircle(center, plane == null && miles ? radius * GeoShape.KmPerMile : radius, plane);
                break;
            }
            case "point":
            {
                double lat = Number(s.Args[0], "latitude"), lng = Number(s.Args[1], "longitude");
                shape = PointOf(lat, lng) ?? throw new InvalidQueryException(Bad($"({lat}, {lng}) is not a latitude (-90..90) and a longitude (-180..180){(plane == null ? "" : " on the field's plane")}."));
                break;
            }
            default:
            {
                var text = Resolve(s.Args[0]);
                // A CIRCLE's radius is in the units given (else the field's: kilometres unless it is in miles).
                bool inMiles = miles;
                if (s.Args.Count > 1 && Resolve(s.Args[1]) is { ValueKind: JsonValueKind.String } units)
                    inMiles = units.GetString() switch
                    {
                        "Miles" => true,
                        "Kilometers" => false,
                        var other => throw new InvalidQueryException(Bad($"units '{other}' are unknown (Kilometers, Miles).")),
                    };
                shape = (text.ValueKind == JsonValueKind.String ? GeoShape.ParseWkt(text.GetString()!, inMiles ? GeoShape.KmPerMile : 1, plane) : null)
                    ?? throw new InvalidQueryException(Bad($"shape {text.GetRawText()} is not WKT this server reads (POINT (lng lat), POLYGON ((lng lat, ..)) with closed rings, LINESTRING (lng lat, ..) or CIRCLE (lng lat d=radius), degrees)."));
                break;
            }
        }
        _shapes[(s, plane, miles)] = shape;
        return shape;

        // spatial.point(lat, lng) / circle(r, lat, lng): on a plane the first coordinate is y, the second x.
        GeoPoint? PointOf(double lat, double lng) => plane != null ? plane.ToGeo(lng, lat) : GeoPoint.Create(lat, lng);
    }

    /// <summary>A row's shapes under a spatial target: a spatial field's WKT values, or the document's point or WKT.</summary>
    private List<GeoShape> ShapesOf(RqlSpatialTarget target, Row row)
    {
        var plane = PlaneOf(target);
        var result = new List<GeoShape>();
        if (target.Latitude != null)
        {
            var lat = row.Values(target.Latitude);
            var lng = row.Values(target.Longitude!);
            if (lat is [{ ValueKind: JsonValueKind.Number } a, ..] && lng is [{ ValueKind: JsonValueKind.Number } b, ..] && GeoPoint.Create(a.GetDouble(), b.GetDouble()) is { } p)
                result.Add(p);
            return result;
        }
        foreach (var v in row.Values(target.Field ?? target.Wkt!))
            if (v.ValueKind == JsonValueKind.String && GeoShape.ParseWkt(v.GetString()!, plane: plane) is { } shape)
                result.Add(shape);
        return result;
    }

    /// <summary>How a facet field's values are counted: as its index terms.</summary>
    private FieldTerms FacetTerms(RqlPath path)
    {
        var field = path.IsId ? null : _compiled?.Field(path.ToString());
        return new FieldTerms(field?.Indexing == FieldIndexing.Exact, field?.Indexing == FieldIndexing.Search ? field.TextAnalyzer : null);
    }

    private static readonly TimeSpan RegexTimeout = TimeSpan.FromMilliseconds(100);
    private readonly Dictionary<RqlMethod, System.Text.RegularExpressions.Regex> _regexes = new(ReferenceEqualityComparer.Instance);

    /// <summary>
    /// regex()'s pattern (.NET syntax, matched anywhere in the value unless anchored, against the value as the
    /// index holds it: lower-cased unless the field is Exact), compiled once per query, with a time limit per
    /// value; a pattern that does not parse is a 400.
    /// </summary>
    private System.Text.RegularExpressions.Regex RegexOf(RqlMethod m)
    {
        if (_regexes.TryGetValue(m, out var regex))
            return regex;
        string pattern = Resolve(m.Value!).GetString()!;
        try
        {
            regex = new System.Text.RegularExpressions.Regex(pattern, System.Text.RegularExpressions.RegexOptions.CultureInvariant, RegexTimeout);
        }
        catch (ArgumentException e)
        {
            throw new InvalidQueryException($"Invalid query at position {m.Value!.Position}: the regex() pattern '{pattern}' is not a valid regular expression: {e.Message}");
        }
        _regexes[m] = regex;
        return regex;
    }
}
