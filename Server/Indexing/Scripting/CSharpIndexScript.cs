using System.Collections;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>
/// The base of a compiled C# index (<see cref="CSharpIndexCompiler"/>): its constructor registers each map;
/// its public methods are the functions RavenDB's index code calls (<c>Id</c>, <c>MetadataFor</c>,
/// <c>LoadDocument</c>, <c>AsJson</c>, <c>Recurse</c>, <c>CreateField</c>, <c>CreateSpatialField</c>).
/// </summary>
public abstract class CSharpIndexScript
{
    private readonly List<(string Collection, Func<IEnumerable<dynamic>, IEnumerable> Map)> _maps = [];

    internal IReadOnlyList<(string Collection, Func<IEnumerable<dynamic>, IEnumerable> Map)> Maps => _maps;

    /// <summary>Registers the map of <paramref name="collection"/> (called by the generated constructor).</summary>
    protected void AddMap(string collection, Func<IEnumerable<dynamic>, IEnumerable> map) => _maps.Add((collection, map));

    internal Func<IEnumerable<dynamic>, IEnumerable>? Reduce { get; private set; }

    internal Func<dynamic, object>? ReduceKey { get; private set; }

    /// <summary>Registers the reduce (called by the generated constructor of a map-reduce index).</summary>
    protected void SetReduce(Func<IEnumerable<dynamic>, IEnumerable> reduce) => Reduce = reduce;

    /// <summary>Registers the reduce's group-by key of one map result.</summary>
    protected void SetReduceKey(Func<dynamic, object> key) => ReduceKey = key;

    /// <summary>The document's id.</summary>
    public dynamic Id(object document) => document is DynamicJsonObject { DocumentId: { } id } ? id : DynamicNull.Instance;

    /// <summary>The document's <c>@metadata</c> (with <c>@id</c>).</summary>
    public dynamic MetadataFor(object document) => document is DynamicJsonObject o ? o["@metadata"] : DynamicNull.Instance;

    /// <summary>The compare-exchange value under <paramref name="key"/> (its <c>Object</c>), null when there is none (RavenDB's <c>LoadCompareExchangeValue</c>).</summary>
    public dynamic LoadCompareExchangeValue(object key) => key is string k ? DynamicJson.Wrap(ScriptContext.CompareExchange(k)) : DynamicNull.Instance;

    /// <summary>The names of the document's counters, as its metadata lists them (RavenDB's <c>CounterNamesFor</c>).</summary>
    public IEnumerable<string> CounterNamesFor(object document) => MetadataNames(document, "@counters");

    /// <summary>The names of the document's time series, as its metadata lists them (RavenDB's <c>TimeSeriesNamesFor</c>).</summary>
    public IEnumerable<string> TimeSeriesNamesFor(object document) => MetadataNames(document, "@timeseries");

    private static string[] MetadataNames(object document, string key) =>
        document is DynamicJsonObject o && o["@metadata"] is DynamicJsonObject meta && meta[key] is DynamicJsonArray names ? names.OfType<string>().ToArray() : [];

    /// <summary>The document as it is (RavenDB's <c>AsJson</c>).</summary>
    public dynamic AsJson(object document) => document;

    /// <summary>The document with id <paramref name="id"/> at the time the entry is made; null when there is none.</summary>
    public dynamic LoadDocument(object id) => ScriptContext.Load(id, null);

    /// <summary>As <see cref="LoadDocument(object)"/>, null unless the document is in <paramref name="collection"/>.</summary>
    public dynamic LoadDocument(object id, string collection) => ScriptContext.Load(id, collection);

    /// <summary><paramref name="item"/> and everything reached from it by <paramref name="next"/>, depth first (at most 1,000 levels).</summary>
    public IEnumerable<dynamic> Recurse(object item, Func<dynamic, dynamic> next)
    {
        var result = new List<dynamic>();
        var stack = new Stack<(object Item, int Depth)>();
        stack.Push((item, 0));
        while (stack.Count > 0)
        {
            var (current, depth) = stack.Pop();
            foreach (var x in DynamicLinq.Enumerate(current))
            {
                result.Add(x);
                if (result.Count > 100_000 || depth >= 1000)
                    throw new InvalidOperationException("Recurse: more than 1,000 levels or 100,000 items.");
                stack.Push(((object)next(x), depth + 1));
            }
        }
        return result;
    }

    /// <summary>A field named by the index code at run time (RavenDB's dynamic fields): indexed with default options.</summary>
    public object CreateField(string name, object? value) => DynamicField.Create(name, value, null, false);

    /// <summary>A dynamic field, stored and analyzed (<c>FieldIndexing.Search</c>) as asked.</summary>
    public object CreateField(string name, object? value, bool stored, bool analyzed) =>
        DynamicField.Create(name, value, analyzed ? FieldIndexing.Search : null, stored);

    /// <summary>A dynamic field with RavenDB's <c>CreateFieldOptions</c> (indexing and storage; term vectors are accepted and not kept).</summary>
    public object CreateField(string name, object? value, CreateFieldOptions options) =>
        DynamicField.Create(name, value, options?.Indexing, options?.Storage == FieldStorage.Yes);

    /// <summary><c>value.Boost(n)</c> (rewritten to this call): the value, whose matches in search() score n times higher.</summary>
    public object Boost(object? value, float boost) => new BoostedValue(value, boost);

    /// <summary><c>new { ... }.Boost(n)</c> (rewritten to this call): an entry whose every field scores n times higher.</summary>
    public BoostedEntry<T> BoostEntry<T>(T entry, float boost) => new(entry, boost);

    /// <summary>A spatial point from a latitude and a longitude; no value when either is null.</summary>
    public object CreateSpatialField(object? latitude, object? longitude) => SpatialField(latitude, longitude);

    /// <summary>A spatial shape from WKT (a POINT or POLYGON); no value when null.</summary>
    public object CreateSpatialField(object? wkt) => SpatialField(wkt);

    /// <summary>CreateSpatialField(lat, lng) of C# and JavaScript index code.</summary>
    internal static object SpatialField(object? latitude, object? longitude)
    {
        if (DynamicJson.IsNull(latitude) || DynamicJson.IsNull(longitude))
            return DynamicNull.Instance;
        // A Cartesian field's y and x may lie outside latitudes and longitudes: the field checks its shapes' coordinates when it indexes them.
        if (latitude is not (long or double or int or decimal or float) || longitude is not (long or double or int or decimal or float)
            || Convert.ToDouble(latitude, CultureInfo.InvariantCulture) is var lat && !double.IsFinite(lat)
            || Convert.ToDouble(longitude, CultureInfo.InvariantCulture) is var lng && !double.IsFinite(lng))
            throw new ArgumentException($"CreateSpatialField: ({latitude}, {longitude}) is not a latitude and a longitude (or y and x).");
        return new SpatialValue(string.Create(CultureInfo.InvariantCulture, $"POINT ({lng:R} {lat:R})"));
    }

    /// <summary>CreateSpatialField(wkt) of C# and JavaScript index code.</summary>
    internal static object SpatialField(object? wkt)
    {
        if (DynamicJson.IsNull(wkt))
            return DynamicNull.Instance;
        if (wkt is not string s || GeoShape.ParseWkt(s, plane: GeoPlane.Unbounded) == null)
            throw new ArgumentException($"CreateSpatialField: {JsonSerializer.Serialize(wkt?.ToString())} is not a WKT POINT or POLYGON.");
        return new SpatialValue(s);
    }
}

/// <summary>A spatial field's value (WKT).</summary>
public sealed class SpatialValue(string wkt)
{
    /// <summary>The shape as WKT.</summary>
    public string Wkt { get; } = wkt;

    public override string ToString() => Wkt;
}

/// <summary>What index code may read while one document is mapped: other documents, through the caller's transaction.</summary>
internal static class ScriptContext
{
    [ThreadStatic]
    private static DocumentLoader? t_loader;

    [ThreadStatic]
    private static List<JsonDocument>? t_loaded;

    [ThreadStatic]
    private static HashSet<string>? t_loadedIds;

    /// <summary>
    /// Makes <paramref name="loader"/> the source of LoadDocument on this thread until the returned scope ends;
    /// <paramref name="loadedIds"/>, when given, receives every id asked for (lower-cased), found or not.
    /// </summary>
    public static Scope Enter(DocumentLoader? loader, HashSet<string>? loadedIds = null)
    {
        var previous = (t_loader, t_loaded, t_loadedIds);
        t_loader = loader;
        t_loaded = null;
        t_loadedIds = loadedIds;
        return new Scope(previous);
    }

    [ThreadStatic]
    private static AttachmentLoader? t_attachments;

    /// <summary>Makes <paramref name="loader"/> where index code reads attachment contents on this thread until the scope ends.</summary>
    public static AttachmentScope EnterAttachments(AttachmentLoader loader)
    {
        var previous = t_attachments;
        t_attachments = loader;
        return new AttachmentScope(previous);
    }

    /// <summary>An attachment's content by its hash, or null (none, too large, or no reader on this thread).</summary>
    public static byte[]? AttachmentContent(string hash) => t_attachments?.Invoke(hash);

    public readonly struct AttachmentScope(AttachmentLoader? previous) : IDisposable
    {
        public void Dispose() => t_attachments = previous;
    }

    [ThreadStatic]
    private static Func<string, JsonElement>? t_compareExchange;

    /// <summary>
    /// The prefix of a compare-exchange key among the ids a map read (<see cref="Enter"/>'s set): the batch keeps them
    /// apart from document references. No lower-cased document id a map loads starts with NUL.
    /// </summary>
    public const string CompareExchangeMarker = "\0cmpxchg\0";

    /// <summary>Makes <paramref name="reader"/> (a key's value <c>Object</c>, JSON null when none) where index code reads compare-exchange values on this thread until the scope ends.</summary>
    public static CompareExchangeScope EnterCompareExchange(Func<string, JsonElement> reader)
    {
        var previous = t_compareExchange;
        t_compareExchange = reader;
        return new CompareExchangeScope(previous);
    }

    /// <summary>
    /// A compare-exchange value for index code (JavaScript <c>cmpxchg(key)</c>, C# <c>LoadCompareExchangeValue(key)</c>): its
    /// <c>Object</c>, JSON null when there is none or no reader; the key is noted so that a change of it maps this document again.
    /// </summary>
    public static JsonElement CompareExchange(string key)
    {
        t_loadedIds?.Add(CompareExchangeMarker + key.ToLowerInvariant());
        return t_compareExchange?.Invoke(key) ?? NullValue;
    }

    private static readonly JsonElement NullValue = JsonDocument.Parse("null").RootElement.Clone();

    public readonly struct CompareExchangeScope(Func<string, JsonElement>? previous) : IDisposable
    {
        public void Dispose() => t_compareExchange = previous;
    }

    /// <summary>Keeps <paramref name="document"/> alive until the current scope ends.</summary>
    public static void Keep(JsonDocument document) => (t_loaded ??= []).Add(document);

    /// <summary>
    /// Another document for index code; <paramref name="tracked"/> false (<c>noTracking.load</c>) does not note it as a
    /// reference, so a change of it does not map this document again.
    /// </summary>
    public static object Load(object id, string? collection, bool tracked = true)
    {
        if (id is not string s || t_loader == null)
            return DynamicNull.Instance;
        if (tracked)
            t_loadedIds?.Add(s.ToLowerInvariant());
        if (t_loader(s) is not { } found || (collection != null && !string.Equals(found.Collection, collection, StringComparison.OrdinalIgnoreCase)))
            return DynamicNull.Instance;
        return new DynamicJsonObject(found.Json, found.Id);
    }

    public readonly struct Scope((DocumentLoader? Loader, List<JsonDocument>? Loaded, HashSet<string>? LoadedIds) previous) : IDisposable
    {
        public void Dispose()
        {
            if (t_loaded != null)
                foreach (var d in t_loaded)
                    d.Dispose();
            (t_loader, t_loaded, t_loadedIds) = previous;
        }
    }
}

/// <summary>
/// A field whose name the index code chose for this entry (<c>CreateField</c>, <c>createField</c>): its values are
/// indexed under <see cref="Name"/> whatever property of the entry holds it (RavenDB's convention is <c>_</c>).
/// </summary>
public sealed class DynamicField
{
    private DynamicField(string name, object? value, FieldIndexing? indexing, bool stored) => (Name, Value, Indexing, Stored) = (name, value, indexing, stored);

    /// <summary>The field's name in queries.</summary>
    public string Name { get; }

    /// <summary>Its value (a sequence gives several values).</summary>
    public object? Value { get; }

    /// <summary>How it is indexed; null: the default.</summary>
    public FieldIndexing? Indexing { get; }

    /// <summary>Projections read it from the index by default.</summary>
    public bool Stored { get; }

    internal static DynamicField Create(object? name, object? value, FieldIndexing? indexing, bool stored)
    {
        if (name is not string s || string.IsNullOrWhiteSpace(s))
            throw new ArgumentException($"CreateField: the field name must be non-empty text, not {(name is null || DynamicJson.IsNull(name) ? "null" : JsonSerializer.Serialize(name.ToString()))}.");
        if (s.StartsWith('@') || s.Length > 256)
            throw new ArgumentException($"CreateField: '{s}' is not a field name (at most 256 characters, not starting with '@').");
        return new DynamicField(s, value, indexing, stored);
    }

    public override string ToString() => Name;
}

/// <summary>RavenDB's <c>CreateFieldOptions</c> for <c>CreateField</c> in C# index code.</summary>
public sealed class CreateFieldOptions
{
    /// <summary>Store the field (projections read it from the index).</summary>
    public FieldStorage? Storage { get; set; }

    /// <summary>How the field is indexed.</summary>
    public FieldIndexing? Indexing { get; set; }

    /// <summary>Accepted for RavenDB's code; term vectors are not kept.</summary>
    public FieldTermVector? TermVector { get; set; }
}

/// <summary>RavenDB's <c>FieldStorage</c>.</summary>
public enum FieldStorage
{
    Yes,
    No,
}

/// <summary>RavenDB's <c>FieldTermVector</c> (accepted, not kept).</summary>
public enum FieldTermVector
{
    No,
    Yes,
    WithPositions,
    WithOffsets,
    WithPositionsAndOffsets,
}

/// <summary>A mapped value with an index-time boost (RavenDB's <c>.Boost(n)</c>): Lucene scores its search() matches n times higher.</summary>
public sealed class BoostedValue(object? value, float boost)
{
    /// <summary>The value itself.</summary>
    public object? Value { get; } = value;

    /// <summary>The factor.</summary>
    public float Boost { get; } = boost;

    /// <summary>The value unwrapped and the product of the boosts of any wrappers around it.</summary>
    public static (object? Value, float Boost) Unwrap(object? value)
    {
        float boost = 1;
        while (value is BoostedValue b)
        {
            boost *= b.Boost;
            value = b.Value;
        }
        return (value, boost);
    }
}

/// <summary>What an untyped caller reads of a <see cref="BoostedEntry{T}"/>.</summary>
public interface IBoostedEntry
{
    /// <summary>The entry (an anonymous object).</summary>
    object? Entry { get; }

    /// <summary>The factor every field of it is boosted by.</summary>
    float Boost { get; }
}

/// <summary>A whole map entry boosted (<c>select new { ... }.Boost(n)</c>); typed, so the compiler still sees the entry's fields.</summary>
public sealed class BoostedEntry<T>(T entry, float boost) : IBoostedEntry
{
    /// <summary>The entry.</summary>
    public T Entry { get; } = entry;

    /// <summary>The factor.</summary>
    public float Boost { get; } = boost;

    object? IBoostedEntry.Entry => Entry;
}
