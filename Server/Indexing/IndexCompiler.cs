using RavenLite.Server.Indexing.Scripting;
using RavenLite.Server.Queries;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Turns an index definition into a <see cref="CompiledIndex"/>: auto indexes map document paths; static C# maps
/// are compiled with Roslyn (<see cref="CSharpIndexCompiler"/>) and JavaScript maps run in Jint
/// (<see cref="JavaScriptIndex"/>), as RavenDB does. The definition's field options (Indexing, Analyzer, Spatial)
/// apply to the fields the maps output.
/// </summary>
public static class IndexCompiler
{
    // Kept whole: the dispatch over index kinds (auto, C#, JavaScript, map-reduce) and the checks every kind
    // shares.
    /// <summary>Compiles <paramref name="definition"/> (400 IndexCompilationException naming the problem).</summary>
    /// <param name="definition">The definition.</param>
    /// <param name="analysis">The custom analyzers its fields may name (a database's); null: none.</param>
    /// <param name="checkAnalyzers">True: a field naming an analyzer that is neither Lucene's nor in <paramref name="analysis"/> is refused
    /// (a definition being stored); false: such a field is analyzed as a default search field until the analyzer exists (a stored definition opening).</param>
    public static CompiledIndex Compile(IndexDefinition definition, Analysis.CustomAnalysis? analysis = null, bool checkAnalyzers = true)
    {
        if (definition.IsAuto)
        {
            var autoFields = definition.AutoFields.Select((f, i) => new IndexField(f.Path, (ushort)i, f.Search ? FieldIndexing.Search : FieldIndexing.Default)).ToList();
            return new CompiledIndex([definition.Collection!], autoFields, definition.AutoFields.Select(f => f.Path.Split('.')).ToList()) { MissingFieldsAsNull = definition.MissingFieldsAsNull };
        }
        if (definition.Maps.Count == 0)
            throw new IndexCompilationException($"Index '{definition.Name}' has no maps.", "Maps", "");
        if (definition.OutputReduceToCollection is { } output && !definition.IsMapReduce)
            throw new IndexCompilationException($"Index '{definition.Name}': OutputReduceToCollection needs a reduce.", "OutputReduceToCollection", output);
        IReadOnlyList<ScriptMap> maps;
        ScriptReduce? reduce;
        if (definition.IsJavaScript)
        {
            (maps, reduce) = JavaScriptIndex.Compile(definition.Maps, definition.IsMapReduce ? definition.Reduce : null, [.. definition.AdditionalSources.Values]);
        }
        else
        {
            var compiled = CSharpIndexCompiler.Compile(definition.Maps, definition.IsMapReduce ? definition.Reduce : null, [.. definition.AdditionalSources.Values], assemblies: definition.AdditionalAssemblies);
            maps = compiled.Maps.Select(m => (ScriptMap)new CSharpMap(m)).ToList();
            reduce = compiled.Reduce == null ? null : new CSharpReduce(compiled.Reduce);
        }
        var names = new List<string>();
        foreach (var fields in reduce != null ? [reduce.Fields] : maps.Select(m => m.Fields))
            foreach (string name in fields)
                if (!names.Contains(name, StringComparer.Ordinal))
                    names.Add(name);
        if (names.Count == 0 && !(definition.IsJavaScript && reduce == null))
            throw new IndexCompilationException($"Index '{definition.Name}': the maps output no fields.", "Maps", definition.Maps[0]);
        var collections = new List<string>();
        var sources = new HashSet<string>(StringComparer.OrdinalIgnoreCase);
        foreach (var map in maps)
        {
            if (map.Source.Kind != definition.SourceType)
                throw new IndexCompilationException($"Index '{definition.Name}' has SourceType {definition.SourceType}, but a map reads {map.Source.Kind} "
                    + "(documents: from o in docs.Orders; counters: from c in counters.Companies; time series: from ts in timeSeries.Companies.HeartRate).", "Maps", map.Collection);
            if (!sources.Add(map.Source.Key))
                throw new IndexCompilationException($"Index '{definition.Name}' has two maps over '{map.Source.Key}'; use one.", "Maps", map.Collection);
            if (!collections.Contains(map.Collection, StringComparer.OrdinalIgnoreCase))
                collections.Add(map.Collection);
        }
        if (collections.Count > 1 && collections.Contains(CompiledIndex.AllDocuments))
            throw new IndexCompilationException($"Index '{definition.Name}': a map over every document (from doc in docs) maps each collection already; it is the index's only map.", "Maps", definition.Maps[0]);
        var options = new Dictionary<string, FieldIndexing>(StringComparer.Ordinal);
        var analyzers = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var (name, element) in definition.FieldOptions)
        {
            FieldIndexing indexing = FieldIndexing.Default;
            string? analyzer = null;
            if (element.ValueKind == JsonValueKind.Object && element.TryGetProperty("Analyzer", out var an) && an.ValueKind == JsonValueKind.String && !string.IsNullOrWhiteSpace(an.GetString()))
            {
                analyzer = an.GetString()!;
                if (checkAnalyzers && AnalyzerCatalog.Resolve(analyzer) == null && analysis?.Analyzer(analyzer) == null)
                    throw new IndexCompilationException($"Field '{name}': there is no analyzer '{analyzer}' (name a Lucene.Net or Lucene.Net.Analysis.Common analyzer, e.g. StandardAnalyzer, EnglishAnalyzer, WhitespaceAnalyzer, or a custom analyzer of the database or the server).", "Fields", analyzer);
            }
            if (element.ValueKind == JsonValueKind.Object && element.TryGetProperty("Indexing", out var ix) && ix.ValueKind == JsonValueKind.String)
            {
                indexing = ix.GetString() switch
                {
                    "Search" => FieldIndexing.Search,
                    "Exact" => FieldIndexing.Exact,
                    "Default" => FieldIndexing.Default,
                    var other => throw new IndexCompilationException($"Field '{name}': Indexing '{other}' is not supported (use Default, Exact or Search).", "Fields", name),
                };
            }
            // A field with an analyzer is searched with it (RavenDB analyzes such fields); Exact keeps whole values.
            if (analyzer != null && indexing != FieldIndexing.Exact)
            {
                indexing = FieldIndexing.Search;
                analyzers[name] = analyzer;
            }
            options[name] = indexing;
        }
        var spatial = maps.SelectMany(m => m.SpatialFields).ToHashSet(StringComparer.Ordinal);
        var miles = new HashSet<string>(StringComparer.Ordinal);
        var planes = new Dictionary<string, GeoPlane>(StringComparer.Ordinal);
        var boxes = new HashSet<string>(StringComparer.Ordinal);
        foreach (var (name, element) in definition.FieldOptions)
        {
            if (element.ValueKind != JsonValueKind.Object || !element.TryGetProperty("Spatial", out var so) || so.ValueKind != JsonValueKind.Object)
                continue;
            if (so.TryGetProperty("Type", out var type) && type.ValueKind == JsonValueKind.String && type.GetString() is not ("Geography" or "Cartesian"))
                throw new IndexCompilationException($"Field '{name}': spatial Type '{type.GetString()}' is not Geography or Cartesian.", "Fields", name);
            if (GeoPlane.Of(name, so) is { } plane)
                planes[name] = plane;
            else if (so.TryGetProperty("Units", out var units) && units.ValueKind == JsonValueKind.String && units.GetString() == "Miles")
                miles.Add(name);
            if (so.TryGetProperty("Strategy", out var strategy) && strategy.ValueKind == JsonValueKind.String && strategy.GetString() == "BoundingBox")
                boxes.Add(name);
        }
        var stored = definition.FieldOptions.Where(kv => kv.Value.ValueKind == JsonValueKind.Object && kv.Value.TryGetProperty("Storage", out var st) && st.ValueKind == JsonValueKind.String && st.GetString() == "Yes")
            .Select(kv => kv.Key).ToHashSet(StringComparer.Ordinal);
        var fieldList = names.Select((n, i) => new IndexField(n, (ushort)i, options.GetValueOrDefault(n), analyzers.GetValueOrDefault(n), spatial.Contains(n), miles.Contains(n), stored.Contains(n)) { Analysis = analysis, Plane = planes.GetValueOrDefault(n), BoundingBox = boxes.Contains(n) }).ToList();
        // Fields named at run time (CreateField) take the definition's options for their name, unless the call gives its own.
        IndexField DynamicField(string name, ushort id, FieldIndexing? indexing, bool isStored) =>
            new(name, id, indexing ?? options.GetValueOrDefault(name), indexing is null or FieldIndexing.Search ? analyzers.GetValueOrDefault(name) : null,
                Stored: isStored || stored.Contains(name)) { Analysis = analysis };
        if (definition.OutputReduceToCollection is { } outputCollection && collections.Contains(outputCollection, StringComparer.OrdinalIgnoreCase))
            throw new IndexCompilationException($"Index '{definition.Name}': OutputReduceToCollection '{outputCollection}' is a collection the index maps; its results would be mapped again.", "OutputReduceToCollection", outputCollection);
        ReferencePattern? references = null;
        if (definition.PatternForOutputReduceToCollectionReferences is { } pattern)
        {
            if (definition.OutputReduceToCollection == null)
                throw new IndexCompilationException($"Index '{definition.Name}': PatternForOutputReduceToCollectionReferences needs OutputReduceToCollection.", "PatternForOutputReduceToCollectionReferences", pattern);
            references = ReferencePattern.Parse(pattern, names);
        }
        string code = string.Join("\n", definition.Maps.Concat(definition.AdditionalSources.Values));
        bool usesLoad = definition.IsJavaScript ? code.Contains("load(", StringComparison.Ordinal) : code.Contains("LoadDocument", StringComparison.Ordinal);
        bool usesCompareExchange = code.Contains(definition.IsJavaScript ? "cmpxchg(" : "LoadCompareExchangeValue", StringComparison.Ordinal);
        // A JavaScript map's fields are what it returns at run time (RavenDB collects them so): any may be new.
        bool createsFields = definition.IsJavaScript ? reduce == null || code.Contains("createField(", StringComparison.Ordinal) : code.Contains("CreateField(", StringComparison.Ordinal);
        if (createsFields && reduce != null)
            throw new IndexCompilationException($"Index '{definition.Name}': CreateField is for map indexes; a map-reduce index's fields are its reduce's.", "Maps", definition.Maps[0]);
        return new CompiledIndex(collections, fieldList, maps, reduce, createsFields ? DynamicField : null) { UsesLoad = usesLoad, UsesCompareExchange = usesCompareExchange, OutputReferences = references, MissingFieldsAsNull = definition.MissingFieldsAsNull };
    }
}

/// <summary>A compiled index: its collections, fields, and how each collection's documents map to field values.</summary>
public sealed class CompiledIndex
{
    private readonly Dictionary<string, (ScriptMap Map, int[] FieldIds)>? _maps;
    private readonly List<string[]>? _paths;
    private readonly int _staticFields;
    private readonly Func<string, ushort, FieldIndexing?, bool, IndexField>? _dynamicField;
    private readonly Lock _fieldsLock = new();
    private volatile FieldSet _fields;

    /// <summary>The fields and their lookup by name, replaced as a whole when a dynamic field is added (readers never lock).</summary>
    private sealed record FieldSet(IndexField[] List, Dictionary<string, IndexField> ByName)
    {
        public static FieldSet Of(IEnumerable<IndexField> fields)
        {
            var list = fields.ToArray();
            return new FieldSet(list, list.ToDictionary(f => f.Name, StringComparer.Ordinal));
        }
    }

    internal CompiledIndex(IReadOnlyList<string> collections, IReadOnlyList<IndexField> fields, List<string[]> autoPaths)
    {
        Collections = collections;
        _fields = FieldSet.Of(fields);
        _staticFields = fields.Count;
        _paths = autoPaths;
        var projection = new DocumentProjection(autoPaths.Select(p => p[0].Replace("[]", "", StringComparison.Ordinal)));
        _projections = collections.ToDictionary(c => c, _ => (DocumentProjection?)projection, StringComparer.OrdinalIgnoreCase);
    }

    internal CompiledIndex(IReadOnlyList<string> collections, IReadOnlyList<IndexField> fields, IReadOnlyList<ScriptMap> maps, ScriptReduce? reduce,
        Func<string, ushort, FieldIndexing?, bool, IndexField>? dynamicField = null)
    {
        Collections = collections;
        _fields = FieldSet.Of(fields);
        _staticFields = fields.Count;
        _dynamicField = dynamicField;
        Reducer = reduce;
        _maps = maps.ToDictionary(m => m.Source.Key, m => (m, reduce != null ? [] : m.Fields.Select(f => (int)_fields.ByName[f].Id).ToArray()), StringComparer.OrdinalIgnoreCase);
        _projections = maps.ToDictionary(m => m.Source.Key, m => m.Reads is { } reads && m.Source.Kind == IndexSourceType.Documents ? new DocumentProjection(reads) : null, StringComparer.OrdinalIgnoreCase);
        SourceType = maps.Count > 0 ? maps[0].Source.Kind : IndexSourceType.Documents;
    }

    /// <summary>What the maps read: documents, or the counters or time series of documents (then each map output is an entry of its own, see <see cref="StoresAnswers"/>).</summary>
    public IndexSourceType SourceType { get; } = IndexSourceType.Documents;

    /// <summary>
    /// The index's entries are answers themselves, stored with them: reduce results, and each output of a counters or
    /// time-series map (RavenDB answers such queries from the index, there being no document per entry).
    /// </summary>
    public bool StoresAnswers => IsMapReduce || SourceType != IndexSourceType.Documents;

    /// <summary>Counters and time series: the maps that read items of documents of <paramref name="collection"/>.</summary>
    internal IEnumerable<ScriptMap> ItemMaps(string collection) =>
        _maps!.Values.Select(m => m.Map).Where(m => m.Collection == AllDocuments || string.Equals(m.Collection, collection, StringComparison.OrdinalIgnoreCase));

    /// <summary>
    /// Counters and time series: what the maps output for one document's items (each map with the items it reads), as
    /// JSON objects; a new property of a JavaScript map's output becomes a field. Throws IndexMapException when index code fails.
    /// </summary>
    internal List<byte[]> ItemResults(IReadOnlyList<(ScriptMap Map, byte[] Item)> items, string documentId, DocumentLoader? loader, HashSet<string>? loadedIds)
    {
        var results = new List<byte[]>();
        using (ScriptContext.Enter(loader, loadedIds))
        {
            foreach (var (map, item) in items)
            {
                try
                {
                    using var parsed = JsonDocument.Parse(item);
                    map.MapResults(parsed.RootElement, documentId, results);
                }
                catch (Exception e) when (e is not (OutOfMemoryException or DomainException))
                {
                    throw new IndexMapException($"The map of '{map.Source.Key}' failed for '{documentId}': {Cause(e)}", e);
                }
            }
        }
        if (_dynamicField != null && Reducer == null)
            foreach (var r in results)
            {
                using var parsed = JsonDocument.Parse(r);
                foreach (var p in parsed.RootElement.EnumerateObject())
                    if (p.Name != "@metadata")
                        AddDynamicField(p.Name, null, false);
            }
        return results;
    }

    /// <summary>Map-reduce: map results grouped by reduce key (canonical JSON), each group as a JSON array.</summary>
    internal List<(string KeyJson, byte[] Results)> GroupByReduceKey(List<byte[]> results)
    {
        var groups = new Dictionary<string, List<byte[]>>(StringComparer.Ordinal);
        foreach (var r in results)
        {
            using var parsed = JsonDocument.Parse(r);
            string key = Reducer!.KeyOf(parsed.RootElement);
            if (!groups.TryGetValue(key, out var list))
                groups[key] = list = [];
            list.Add(r);
        }
        return groups.Select(g => (g.Key, JsonArray(g.Value))).ToList();
    }

    private readonly Dictionary<string, DocumentProjection?> _projections;

    /// <summary>
    /// What the map of <paramref name="collection"/> reads of a document (its top-level properties), or null when it
    /// may use a document whole: the documents it maps may be handed to it cut down to those properties.
    /// </summary>
    internal DocumentProjection? ProjectionOf(string collection) => _projections.TryGetValue(collection, out var p) ? p : _projections.GetValueOrDefault(AllDocuments);

    /// <summary>The maps create fields at run time (<c>CreateField</c>): a query may name a field no entry has yet (it matches nothing).</summary>
    public bool HasDynamicFields => _dynamicField != null;

    /// <summary>The fields the maps created at run time, in the order they were added (their ids follow the static fields').</summary>
    public IReadOnlyList<IndexField> DynamicFields => _fields.List[_staticFields..];

    /// <summary>The field <paramref name="name"/>, added (the next id) when the index has no such field yet.</summary>
    internal IndexField AddDynamicField(string name, FieldIndexing? indexing, bool stored)
    {
        if (_fields.ByName.TryGetValue(name, out var existing))
            return existing;
        lock (_fieldsLock)
        {
            var current = _fields;
            if (current.ByName.TryGetValue(name, out existing))
                return existing;
            if (current.List.Length >= MaxFields)
                throw new InvalidOperationException($"CreateField: the index already has {MaxFields:N0} fields; '{name}' would be one more.");
            var field = _dynamicField!(name, (ushort)current.List.Length, indexing, stored);
            _fields = FieldSet.Of(current.List.Append(field));
            return field;
        }
    }

    /// <summary>
    /// Sets the dynamic fields to those of the index's last commit (opening, or after a rollback dropped what
    /// followed it): their ids are their positions, as the committed entries have them.
    /// </summary>
    internal void RestoreDynamicFields(IReadOnlyList<(string Name, FieldIndexing? Indexing, bool Stored)> committed)
    {
        if (_dynamicField == null)
            return;
        lock (_fieldsLock)
        {
            var list = _fields.List[.._staticFields].ToList();
            foreach (var (name, indexing, stored) in committed)
                if (!list.Any(f => f.Name == name))
                    list.Add(_dynamicField(name, (ushort)list.Count, indexing, stored));
            _fields = FieldSet.Of(list);
        }
    }

    /// <summary>At most this many fields (static and dynamic) per index.</summary>
    private const int MaxFields = 10_000;

    /// <summary>The maps load other documents (LoadDocument, load()): their changes map the documents that loaded them again.</summary>
    public bool UsesLoad { get; init; }

    /// <summary>The maps read compare-exchange values (cmpxchg(), LoadCompareExchangeValue): their changes map the documents that read them again.</summary>
    public bool UsesCompareExchange { get; init; }

    /// <summary>
    /// The definition's <c>Indexing.IndexMissingFieldsAsNull</c>: an entry without a field equals null in queries. Off by
    /// default, as RavenDB: only a field whose value is null matches <c>= null</c>.
    /// </summary>
    public bool MissingFieldsAsNull { get; init; }

    /// <summary>Map-reduce with an output collection: the id pattern of the reference documents listing its outputs, else null.</summary>
    public ReferencePattern? OutputReferences { get; init; }

    /// <summary>The reduce of a map-reduce index, else null.</summary>
    internal ScriptReduce? Reducer { get; }

    /// <summary>True for a map-reduce index: its entries are reduce results (one per reduce key), not documents.</summary>
    public bool IsMapReduce => Reducer != null;

    /// <summary>
    /// Map-reduce: <see cref="MapResults"/> may run on several threads at once — every map and the reduce key are
    /// compiled C# and no map loads other documents (a load reads through the worker's transaction).
    /// </summary>
    internal bool MapResultsRunOnAnyThread => Reducer is { RunsOnAnyThread: true } && !UsesLoad && !UsesCompareExchange && _maps!.Values.All(m => m.Map.RunsOnAnyThread);

    /// <summary>
    /// A simple map: <see cref="MapEntry"/> may run on several threads at once — an auto index's paths, or maps that are
    /// all compiled C#, load no other documents and create no fields (a new field changes the field list).
    /// </summary>
    internal bool MapEntryRunsOnAnyThread => Reducer == null && !UsesLoad && !UsesCompareExchange && _dynamicField == null && (_paths != null || _maps!.Values.All(m => m.Map.RunsOnAnyThread));

    /// <summary>Map-reduce: the map results of one document, grouped by reduce key (canonical JSON) as JSON arrays.</summary>
    internal List<(string KeyJson, byte[] Results)> MapResults(JsonElement document, string collection, string id, DocumentLoader? loader, HashSet<string>? loadedIds = null)
    {
        var results = new List<byte[]>();
        using (ScriptContext.Enter(loader, loadedIds))
        {
            try
            {
                MapOf(collection).Map.MapResults(document, id, results);
                return GroupByReduceKey(results);
            }
            catch (Exception e) when (e is not (OutOfMemoryException or DomainException))
            {
                throw new IndexMapException($"The map of '{collection}' failed for '{id}': {Cause(e)}", e);
            }
        }
    }

    /// <summary>Map-reduce: reduces the map results of one key (each document's a JSON array); the results as JSON objects.</summary>
    internal List<byte[]> Reduce(IEnumerable<byte[]> perDocument)
    {
        var docs = new List<JsonDocument>();
        try
        {
            var all = new List<JsonElement>();
            foreach (var json in perDocument)
            {
                var d = JsonDocument.Parse(json);
                docs.Add(d);
                all.AddRange(d.RootElement.EnumerateArray());
            }
            var outputs = new List<byte[]>();
            if (all.Count > 0)
                Reducer!.Reduce(all, outputs);
            return outputs;
        }
        catch (Exception e) when (e is not (OutOfMemoryException or DomainException))
        {
            throw new IndexMapException("The reduce failed: " + Cause(e), e);
        }
        finally
        {
            foreach (var d in docs)
                d.Dispose();
        }
    }

    /// <summary>What went wrong in index code (a reflection call's own exception, not its wrapper).</summary>
    private static string Cause(Exception e) => e is System.Reflection.TargetInvocationException { InnerException: { } inner } ? inner.Message : e.Message;

    /// <summary>Map-reduce: the entry (field values) of one reduce result; its fields' arrays flattened.</summary>
    internal MappedEntry EntryOfResult(byte[] result, List<List<JsonElement>> fieldValues)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(256);
        using (var parsed = JsonDocument.Parse(result))
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            var values = new List<JsonElement>();
            foreach (var f in Fields)
            {
                values.Clear();
                if (parsed.RootElement.TryGetProperty(f.Name, out var v))
                    JsonPaths.Walk(v, [], 0, values);
                if (values.Count == 0)
                    continue;
                w.WriteStartArray(f.Name);
                foreach (var x in values)
                    x.WriteTo(w);
                w.WriteEndArray();
            }
            w.WriteEndObject();
        }
        return WithValues(buffer.WrittenSpan.ToArray(), fieldValues);
    }

    /// <summary>The entry <paramref name="json"/>, its values per field put in <paramref name="fieldValues"/> (valid until the result is disposed).</summary>
    private MappedEntry WithValues(byte[] json, List<List<JsonElement>> fieldValues)
    {
        var parsed = JsonDocument.Parse(json);
        var byName = _fields.ByName;
        foreach (var list in fieldValues)
            list.Clear();
        while (fieldValues.Count < byName.Count)
            fieldValues.Add([]);
        foreach (var p in parsed.RootElement.EnumerateObject())
            if (byName.TryGetValue(p.Name, out var f))
                foreach (var v in p.Value.EnumerateArray())
                    fieldValues[f.Id].Add(v);
        return new MappedEntry(json, parsed);
    }

    /// <summary>JSON objects as one JSON array.</summary>
    internal static byte[] JsonArray(List<byte[]> items)
    {
        int length = 2 + items.Sum(i => i.Length) + Math.Max(0, items.Count - 1);
        var result = new byte[length];
        int pos = 0;
        result[pos++] = (byte)'[';
        for (int i = 0; i < items.Count; i++)
        {
            if (i > 0)
                result[pos++] = (byte)',';
            items[i].CopyTo(result, pos);
            pos += items[i].Length;
        }
        result[pos] = (byte)']';
        return result;
    }

    /// <summary>Collections read, in definition order (<see cref="AllDocuments"/>: every document).</summary>
    public IReadOnlyList<string> Collections { get; }

    /// <summary>The collection name of an all-documents map (<c>from doc in docs</c>), RavenDB's name for every document.</summary>
    public const string AllDocuments = "@all_docs";

    /// <summary>Which of <see cref="Collections"/> maps a document of <paramref name="collection"/> (its own, or all documents), or null.</summary>
    public string? SourceOf(string collection)
    {
        foreach (string c in Collections)
            if (c == AllDocuments || string.Equals(c, collection, StringComparison.OrdinalIgnoreCase))
                return c;
        return null;
    }

    /// <summary>The map of a document's collection (an all-documents map maps every collection).</summary>
    private (ScriptMap Map, int[] FieldIds) MapOf(string collection) =>
        _maps!.TryGetValue(collection, out var map) ? map : _maps[AllDocuments];

    /// <summary>Fields, by id (the static ones, then those created at run time).</summary>
    public IReadOnlyList<IndexField> Fields => _fields.List;

    /// <summary>
    /// The field queries call <paramref name="name"/>, or null. An index that creates fields at run time answers
    /// a name it has not seen with a field no entry has (id <see cref="UnknownFieldId"/>): the query matches nothing.
    /// </summary>
    public IndexField? Field(string name) =>
        _fields.ByName.GetValueOrDefault(name) ?? (_dynamicField != null ? new IndexField(name, UnknownFieldId, FieldIndexing.Default) : null);

    /// <summary>The id of a field no entry has (see <see cref="Field"/>).</summary>
    public const ushort UnknownFieldId = ushort.MaxValue;

    /// <summary>The entry of <paramref name="document"/> as JSON; <c>{}</c> (no values) when the map fails for it or outputs nothing.</summary>
    public byte[] EntryOrEmpty(JsonElement document, string collection, string id, DocumentLoader? loader) =>
        EntryOrNone(document, collection, id, loader) ?? "{}"u8.ToArray();

    /// <summary>The entry of <paramref name="document"/> as JSON, or null when the map fails for it or outputs nothing (no entry).</summary>
    public byte[]? EntryOrNone(JsonElement document, string collection, string id, DocumentLoader? loader)
    {
        try
        {
            using var mapped = MapEntry(document, collection, id, null, loader);
            return mapped.Json.Length > 0 ? mapped.Json : null;
        }
        catch (IndexMapException)
        {
            return null;
        }
    }

    /// <summary>
    /// Maps one document to its entry: a JSON object with, per field that has values, the array of
    /// them (<c>{"Name":["Ann"],"Tags":["a","b"]}</c>). A field with no values is left out; a map that outputs
    /// several entries for the document (fan-out) gives each field the values of all of them.
    /// </summary>
    /// <param name="document">The document.</param>
    /// <param name="collection">Its collection (chooses the map).</param>
    /// <param name="id">Its id.</param>
    /// <param name="fieldValues">When given (one list per field), receives each field's values as well, valid until the result is disposed.</param>
    /// <param name="loader">Where index code's LoadDocument reads other documents (null: it finds none).</param>
    /// <param name="loadedIds">When given, receives the ids the map loaded (lower-cased).</param>
    public MappedEntry MapEntry(JsonElement document, string collection, string id, List<List<JsonElement>>? fieldValues = null, DocumentLoader? loader = null, HashSet<string>? loadedIds = null)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(256);
        if (_paths != null)
        {
            using (var w = new Utf8JsonWriter(buffer))
            {
                w.WriteStartObject();
                var scratch = new List<JsonElement>();
                for (int i = 0; i < _paths.Count; i++)
                {
                    var values = fieldValues?[i] ?? scratch;
                    values.Clear();
                    JsonPaths.Walk(document, _paths[i], 0, values);
                    if (values.Count == 0)
                        continue;
                    w.WriteStartArray(Fields[i].Name);
                    foreach (var v in values)
                        v.WriteTo(w);
                    w.WriteEndArray();
                }
                w.WriteEndObject();
            }
            return new MappedEntry(buffer.WrittenSpan.ToArray(), null);
        }
        float[]? boosts = null;
        var (map, ids) = MapOf(collection);
        var perField = new List<object?>[Fields.Count];
        for (int i = 0; i < perField.Length; i++)
            perField[i] = [];
        var mapValues = new List<object?>[ids.Length];
        for (int k = 0; k < ids.Length; k++)
            mapValues[k] = perField[ids[k]];
        using (ScriptContext.Enter(loader, loadedIds))
        {
            try
            {
                var runtimeFields = new List<object?>();
                map.Map(document, id, mapValues, runtimeFields);
                // Each field's values flattened; a field's list, once flattened, takes the next field's values (no list per field).
                var flat = new List<List<object?>>(perField.Length);
                var scratch = new List<object?>();
                foreach (var values in perField)
                {
                    EntryValues.Flatten(values, scratch);
                    flat.Add(scratch);
                    scratch = values;
                    scratch.Clear();
                }
                boosts = TakeBoosts(flat);
                if (runtimeFields.Count > 0)
                    flat.Add(runtimeFields); // after every field: MoveDynamicFields takes its values to theirs
                if (_dynamicField != null)
                    MoveDynamicFields(flat);
                // A static map that output nothing for the document (a where clause, a JavaScript map returning null,
                // entries without values) gives it no entry, as RavenDB's IndexEmptyEntries default.
                if (flat.All(values => values.Count == 0))
                    return new MappedEntry([], null);
                var fields = Fields;
                using var w = new Utf8JsonWriter(buffer);
                w.WriteStartObject();
                for (int i = 0; i < flat.Count; i++)
                {
                    if (flat[i].Count == 0)
                        continue; // no value: a property the document does not have, or an empty list
                    w.WriteStartArray(fields[i].Name);
                    foreach (var v in flat[i])
                        EntryValues.Write(w, v);
                    w.WriteEndArray();
                }
                w.WriteEndObject();
            }
            catch (Exception e) when (e is not (OutOfMemoryException or DomainException))
            {
                throw new IndexMapException($"The map of '{collection}' failed for '{id}': {Cause(e)}", e);
            }
        }
        byte[] json = buffer.WrittenSpan.ToArray();
        return (fieldValues == null ? new MappedEntry(json, null) : WithValues(json, fieldValues)) with { Boosts = boosts };
    }

    /// <summary>
    /// Unwraps the boosted values (<c>.Boost(n)</c>) of each field; returns each field's boost (the largest of its
    /// values', as Lucene keeps one per field of a document), or null when nothing was boosted.
    /// </summary>
    private static float[]? TakeBoosts(List<List<object?>> flat)
    {
        float[]? boosts = null;
        for (int i = 0; i < flat.Count; i++)
        {
            var values = flat[i];
            for (int k = 0; k < values.Count; k++)
            {
                if (values[k] is not BoostedValue boosted)
                    continue;
                var (value, boost) = BoostedValue.Unwrap(boosted);
                values[k] = value;
                boosts ??= Enumerable.Repeat(1f, flat.Count).ToArray();
                boosts[i] = k == 0 || boosts[i] == 1 ? boost : Math.Max(boosts[i], boost);
            }
        }
        return boosts;
    }

    /// <summary>Moves each <see cref="DynamicField"/> value (whatever field holds it) to the values of the field it names (added when new).</summary>
    private void MoveDynamicFields(List<List<object?>> flat)
    {
        int count = flat.Count;
        for (int i = 0; i < count; i++)
        {
            var values = flat[i];
            if (!values.Any(v => v is DynamicField))
                continue;
            flat[i] = values.Where(v => v is not DynamicField).ToList(); // a new list: the one read below is not written
            foreach (var created in values.OfType<DynamicField>())
            {
                var field = AddDynamicField(created.Name, created.Indexing, created.Stored);
                while (flat.Count <= field.Id)
                    flat.Add([]);
                EntryValues.Flatten([created.Value], flat[field.Id]);
            }
        }
    }
}

/// <summary>Reads another document for index code's LoadDocument: its JSON, id and collection, or null.</summary>
public delegate (JsonElement Json, string Id, string Collection)? DocumentLoader(string id);

/// <summary>Document loaders over a storage transaction.</summary>
public static class DocumentLoaders
{
    /// <summary>LoadDocument reading through <paramref name="tx"/> (the parsed documents live until the map of the current document ends).</summary>
    public static DocumentLoader From(Documents.DocumentsStorage documents, Storage.Transactions.Transaction tx) => id =>
    {
        if (documents.Get(tx, id) is not { } doc)
            return null;
        var parsed = JsonDocument.Parse(doc.Json);
        ScriptContext.Keep(parsed);
        return (parsed.RootElement, doc.Id, doc.Collection);
    };
}

/// <summary>Reads an attachment's content for index code (<c>loadAttachment</c>) by its hash: the bytes, or null when there is none.</summary>
public delegate byte[]? AttachmentLoader(string hash);

/// <summary>Attachment loaders over a storage transaction.</summary>
public static class AttachmentLoaders
{
    /// <summary>Contents larger than this are not handed to index code (null, as a missing one): a map holds one whole.</summary>
    public const long MaxBytes = 16 << 20;

    /// <summary>Contents read through <paramref name="tx"/>.</summary>
    public static AttachmentLoader From(Storage.Transactions.Transaction tx) => hash =>
    {
        if (Attachments.AttachmentsStore.Find(tx, hash) is not { } found || found.Size > MaxBytes)
            return null;
        using var content = new MemoryStream((int)found.Size);
        Attachments.AttachmentsStore.CopyToAsync(tx, found.ContentId, 0, found.Size, content, CancellationToken.None).GetAwaiter().GetResult(); // a memory stream: no wait
        return content.ToArray();
    };
}

/// <summary>Index code failed for one document (an index error; the document gets no entry).</summary>
public sealed class IndexMapException(string message, Exception inner) : Exception(message, inner);

/// <summary>A mapped entry's JSON; the field values given to <see cref="CompiledIndex.MapEntry"/> stay valid until it is disposed.</summary>
public readonly record struct MappedEntry(byte[] Json, JsonDocument? Values) : IDisposable
{
    /// <summary>Each field's index-time boost (<c>.Boost(n)</c>; by field position), or null when none was boosted.</summary>
    public float[]? Boosts { get; init; }

    public void Dispose() => Values?.Dispose();
}
