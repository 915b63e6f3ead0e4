using System.Text.Json.Serialization;

namespace RavenLite.Server.Indexing;

/// <summary>How a field's values are indexed (RavenDB's <c>FieldIndexing</c>).</summary>
public enum FieldIndexing
{
    /// <summary>Lower-cased whole values: equality and ranges ignore case.</summary>
    Default,
    /// <summary>Whole values as they are: equality and ranges are case-sensitive.</summary>
    Exact,
    /// <summary>Analyzed into lower-cased words as well, for <c>search()</c>.</summary>
    Search,
}

/// <summary>One field of an index: its name (what queries use), id (its key prefix) and options.</summary>
/// <param name="Name">Name in queries: a dotted document path for auto indexes, the map's output name for static ones.</param>
/// <param name="Id">Position in the definition; the first two bytes of its posting keys.</param>
/// <param name="Indexing">Default, Exact or Search.</param>
/// <param name="Analyzer">The analyzer of a Search field's text as the definition names it (<see cref="AnalyzerCatalog"/>); null: <see cref="SearchAnalyzer"/>.</param>
/// <param name="Spatial">A spatial field (the map's <c>CreateSpatialField</c>): values are WKT shapes, indexed as geohash cells.</param>
/// <param name="Miles">A spatial field whose circle radii and distances are in miles (field option <c>Spatial.Units</c>); else kilometres.</param>
/// <param name="Stored">Field option <c>Storage: Yes</c>: a projection of the field reads the index's values by default (every entry keeps its values, so any field can be read from the index).</param>
public sealed record IndexField(string Name, ushort Id, FieldIndexing Indexing, string? Analyzer = null, bool Spatial = false, bool Miles = false, bool Stored = false)
{
    /// <summary>A Cartesian spatial field's plane (<c>Spatial.Type: Cartesian</c>); null: geographic.</summary>
    internal GeoPlane? Plane { get; init; }

    /// <summary>Spatial <c>Strategy: BoundingBox</c>: the field's shapes, and the shapes it is queried with, relate as their bounding boxes.</summary>
    internal bool BoundingBox { get; init; }

    /// <summary>Where a custom <see cref="Analyzer"/> is found (the database's and the server's), or null.</summary>
    internal Analysis.CustomAnalysis? Analysis { get; init; }

    /// <summary>The analyzer of this field's searchable text: Lucene's of that name, else the custom one (looked up when used: one stored later applies from then on).</summary>
    internal Lucene.Net.Analysis.Analyzer TextAnalyzer => Analyzer == null ? SearchAnalyzer.Instance
        : AnalyzerCatalog.Resolve(Analyzer) ?? Analysis?.Analyzer(Analyzer) ?? SearchAnalyzer.Instance;
}

/// <summary>
/// A stored index definition (written verbatim to <c>definition.json</c> in the index's folder).
/// Auto indexes list document paths in <see cref="AutoFields"/>; static ones keep the client's
/// <see cref="Maps"/> and <see cref="FieldOptions"/> and are compiled by <see cref="IndexCompiler"/>.
/// </summary>
public sealed class IndexDefinition
{
    /// <summary>Index name, e.g. <c>Users/ByName</c> or <c>Auto/Users/ByAgeAndName</c>.</summary>
    public string Name { get; set; } = "";

    /// <summary>RavenDB IndexType: <c>AutoMap</c>, <c>AutoMapReduce</c>, <c>Map</c>, <c>MapReduce</c>, <c>JavaScriptMap</c> or <c>JavaScriptMapReduce</c>.</summary>
    public string Type { get; set; } = "Map";

    /// <summary>
    /// What the maps read (RavenDB's <c>SourceType</c>): <c>Documents</c>, <c>Counters</c> or <c>TimeSeries</c>. A
    /// definition sent without it takes its maps' source (<c>counters.Companies</c>, <c>timeSeries.map(..)</c>).
    /// </summary>
    [JsonConverter(typeof(JsonStringEnumConverter<IndexSourceType>))]
    public IndexSourceType SourceType { get; set; } = IndexSourceType.Documents;

    /// <summary>The map texts as the client sent them (static indexes).</summary>
    public List<string> Maps { get; set; } = [];

    /// <summary>Code the maps and reduce may call, by name (RavenDB's AdditionalSources): JavaScript functions, or C# classes.</summary>
    public Dictionary<string, string> AdditionalSources { get; set; } = [];

    /// <summary>
    /// Runtime assemblies the C# code may use, by name (RavenDB's <c>AdditionalAssemblies</c> from
    /// <c>AdditionalAssembly.FromRuntime</c>); their types are allowed in index code except those that reach files,
    /// the network, processes, reflection or threads.
    /// </summary>
    public List<string> AdditionalAssemblies { get; set; } = [];

    /// <summary>The reduce of a map-reduce index (C# or JavaScript), else null.</summary>
    public string? Reduce { get; set; }

    /// <summary>Map-reduce: the collection the reduce results are also written to as documents (RavenDB's artificial documents), else null.</summary>
    public string? OutputReduceToCollection { get; set; }

    /// <summary>Map-reduce with an output collection: the id pattern of the reference documents listing the outputs (<see cref="ReferencePattern"/>), else null.</summary>
    public string? PatternForOutputReduceToCollectionReferences { get; set; }

    /// <summary>The collection of the reference documents; null: <c>{OutputReduceToCollection}/References</c>.</summary>
    public string? PatternReferencesCollectionName { get; set; }

    /// <summary>True for map-reduce indexes: their entries are reduce results, not documents.</summary>
    [JsonIgnore]
    public bool IsMapReduce => !string.IsNullOrWhiteSpace(Reduce);

    /// <summary>Field options by name as the client sent them (static indexes): <c>{"Name":{"Indexing":"Search"}}</c>.</summary>
    public Dictionary<string, JsonElement> FieldOptions { get; set; } = [];

    /// <summary>RavenDB's per-index configuration (<c>{"Indexing.IndexMissingFieldsAsNull": "true"}</c>), kept as sent.</summary>
    public Dictionary<string, string> Configuration { get; set; } = [];

    /// <summary><c>Indexing.IndexMissingFieldsAsNull</c> is true (<see cref="CompiledIndex.MissingFieldsAsNull"/>).</summary>
    [JsonIgnore]
    public bool MissingFieldsAsNull => Configuration.TryGetValue("Indexing.IndexMissingFieldsAsNull", out string? v) && string.Equals(v, "true", StringComparison.OrdinalIgnoreCase);

    /// <summary>Auto index: its collection.</summary>
    public string? Collection { get; set; }

    /// <summary>Auto index: the document paths it covers, each with Search when a query used search() on it.</summary>
    public List<AutoField> AutoFields { get; set; } = [];

    /// <summary>Auto map-reduce index: the paths it groups by (empty in definitions written before they were kept).</summary>
    public List<string> AutoGroupBy { get; set; } = [];

    /// <summary>Auto map-reduce index: the paths it sums.</summary>
    public List<string> AutoSums { get; set; } = [];

    /// <summary>True for auto indexes of either kind (auto map, auto map-reduce): RavenDB's record lists them under <c>AutoIndexes</c>.</summary>
    [JsonIgnore]
    public bool IsAnyAuto => Type is "AutoMap" or "AutoMapReduce";

    /// <summary>
    /// The name of the index's data in the database's storage (map and reduce results, references): set when the index
    /// is created and kept when a side-by-side replacement takes the index's name. Null in definitions written before it
    /// existed: the name is used.
    /// </summary>
    public string? StoreId { get; set; }

    /// <summary>When the index was created (UTC).</summary>
    public DateTime CreatedAt { get; set; } = DateTime.UtcNow;

    /// <summary>
    /// RavenDB's index lock mode: <c>Unlock</c>; <c>LockedIgnore</c> (a PUT of a changed definition is ignored);
    /// <c>LockedError</c> (it is refused). Set by <c>/indexes/set-lock</c>; kept across restarts.
    /// </summary>
    public string LockMode { get; set; } = "Unlock";

    /// <summary><c>Low</c>, <c>Normal</c> or <c>High</c>: the priority of the index's worker thread (<c>/indexes/set-priority</c>).</summary>
    public string Priority { get; set; } = "Normal";

    /// <summary><c>Normal</c> or <c>Disabled</c> (<c>/admin/indexes/disable</c>: no indexing until enabled; kept across restarts).</summary>
    public string State { get; set; } = "Normal";

    /// <summary>True for auto indexes.</summary>
    [JsonIgnore]
    public bool IsAuto => Type == "AutoMap";

    /// <summary>True for JavaScript indexes (run in Jint); false for C# ones (compiled with Roslyn).</summary>
    [JsonIgnore]
    public bool IsJavaScript => Type.StartsWith("JavaScript", StringComparison.Ordinal);

    /// <summary>
    /// The type of a static index the client did not name: C# when the first map starts with <c>from</c> or <c>docs</c>
    /// (after comments), else JavaScript, as RavenDB's clients decide.
    /// </summary>
    public static string DetectType(string firstMap, string? reduce = null)
    {
        string text = System.Text.RegularExpressions.Regex.Replace(firstMap, @"/\*[^*]*(?:\*(?!/)[^*]*)*\*/|//.*", "").TrimStart();
        bool csharp = text.StartsWith("from", StringComparison.OrdinalIgnoreCase) || text.StartsWith("docs", StringComparison.OrdinalIgnoreCase)
            || (text.StartsWith("timeseries", StringComparison.OrdinalIgnoreCase) && !text.StartsWith("timeseries.map", StringComparison.OrdinalIgnoreCase))
            || (text.StartsWith("counters", StringComparison.OrdinalIgnoreCase) && !text.StartsWith("counters.map", StringComparison.OrdinalIgnoreCase));
        return (csharp ? "" : "JavaScript") + (string.IsNullOrWhiteSpace(reduce) ? "Map" : "MapReduce");
    }

    /// <summary>
    /// What a map reads when the client did not say, as RavenDB's clients decide: time series when it starts with
    /// <c>timeSeries</c> (or is <c>from x in timeSeries...</c>), counters likewise, else documents.
    /// </summary>
    public static IndexSourceType DetectSourceType(string map)
    {
        string text = System.Text.RegularExpressions.Regex.Replace(map, @"/\*[^*]*(?:\*(?!/)[^*]*)*\*/|//.*", "").Trim();
        text = System.Text.RegularExpressions.Regex.Replace(text, @"\s+", " ").ToLowerInvariant();
        var tokens = text.Split(' ', 5, StringSplitOptions.RemoveEmptyEntries);
        string head = tokens.Length >= 4 && tokens[0] == "from" && tokens[2] == "in" ? tokens[3] : text;
        return head.StartsWith("timeseries", StringComparison.Ordinal) ? IndexSourceType.TimeSeries
            : head.StartsWith("counters", StringComparison.Ordinal) ? IndexSourceType.Counters : IndexSourceType.Documents;
    }

    /// <summary>The prefix of a side-by-side replacement's name: <c>ReplacementOf/Orders/Totals</c>.</summary>
    public const string ReplacementPrefix = "ReplacementOf/";

    internal byte[] Serialize() => JsonSerializer.SerializeToUtf8Bytes(this, SerializerOptions);

    internal static IndexDefinition Deserialize(byte[] json) =>
        JsonSerializer.Deserialize<IndexDefinition>(json, SerializerOptions) ?? throw new JsonException("empty index definition");

    private static readonly JsonSerializerOptions SerializerOptions = new() { WriteIndented = true };

    /// <summary>The auto index name RavenDB would give these fields: <c>Auto/Users/ByAgeAndSearch(Name)</c>.</summary>
    public static string AutoName(string collection, IEnumerable<AutoField> fields) =>
        "Auto/" + collection + "/By" + string.Join("And", fields.Select(f => f.Search ? $"Search({f.Path})" : f.Path));
}

/// <summary>A document path covered by an auto index.</summary>
/// <param name="Path">Dotted path, e.g. <c>Address.City</c>.</param>
/// <param name="Search">Also analyzed for search().</param>
public sealed record AutoField(string Path, bool Search);
