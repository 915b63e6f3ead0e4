using Acornima.Ast;
using Jint;
using Jint.Native;
using Jint.Native.Json;
using Jint.Native.Object;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>
/// JavaScript index maps run in Jint, as RavenDB does: <c>map('Orders', o =&gt; ({ Company: o.Company }))</c> (or a
/// <c>function (o) { ... return { ... }; }</c>), several per index; a map may return an array of objects
/// (fan-out) and call <c>id(doc)</c>, <c>load(id, collection?)</c>, <c>getMetadata(doc)</c> and
/// <c>createSpatialField(lat, lng | wkt)</c>, <c>createField(name, value, options)</c> (a field named at run time),
/// <c>noTracking.load(id)</c> (a load that is not a reference), <c>attachmentsFor(doc)</c> and <c>loadAttachment(doc, name)</c> /
/// <c>loadAttachments(doc)</c> (with <c>getContentAsString()</c>). The fields are what the map
/// returns when it runs: the keys of its object literals are known up front, any other property (an object built
/// step by step, a computed key, RavenDB's <c>_: {$name, $value, $options}</c>) is a field from the first document that has it. A property read on null or undefined gives null or undefined. Each document runs under limits — statements, recursion depth, time and
/// memory — and a document that breaks one, or throws, fails alone (an index error). No .NET types are reachable.
/// </summary>
internal static class JavaScriptIndex
{
    /// <summary>Per document: at most this many statements (RavenDB's default script step limit is 10,000).</summary>
    internal const int MaxStatements = 100_000;

    /// <summary>Per document: at most this deep a call stack.</summary>
    internal const int MaxRecursion = 128;

    /// <summary>Per document: at most this long.</summary>
    internal static readonly TimeSpan Timeout = TimeSpan.FromSeconds(2);

    /// <summary>Per document: at most this much memory allocated.</summary>
    internal const long MaxMemory = 256L << 20;

    /// <summary>RavenDB's property for fields named at run time: <c>_: {$value, $name, $options}</c> or an array of them.</summary>
    internal const string DynamicFieldsKey = "_";

    private const string SpatialMarker = "$spatial$";
    private const string FieldMarker = "$field$";

    public static (IReadOnlyList<ScriptMap> Maps, ScriptReduce? Reduce) Compile(IReadOnlyList<string> scripts, string? reduce = null, IReadOnlyList<string>? additionalSources = null)
    {
        var found = new List<(IndexSource Source, List<string> Fields, HashSet<string> Spatial)>();
        for (int s = 0; s < scripts.Count; s++)
        {
            Script ast;
            try
            {
                ast = new Acornima.Parser().ParseScript(scripts[s]);
            }
            catch (Acornima.ParseErrorException e)
            {
                throw new IndexCompilationException($"Map {s + 1}, line {e.LineNumber}, column {e.Column}: {e.Description}", "Maps", scripts[s]);
            }
            foreach (var call in Descendants(ast).OfType<CallExpression>())
            {
                if (SourceKind(call.Callee) is not { } kind)
                    continue;
                string usage = kind == IndexSourceType.Documents ? "map() takes a collection name and a function: map('Orders', o => ({ ... }))"
                    : $"{(kind == IndexSourceType.Counters ? "counters" : "timeSeries")}.map() takes a collection name, optionally a {(kind == IndexSourceType.Counters ? "counter" : "time series")} name, and a function: {(kind == IndexSourceType.Counters ? "counters.map('Companies', 'Likes', c => ({ ... }))" : "timeSeries.map('Companies', 'HeartRate', ts => ts.Entries.map(e => ({ ... })))")}";
                int expected = kind == IndexSourceType.Documents ? 2 : call.Arguments.Count == 3 ? 3 : 2;
                if (call.Arguments.Count != expected || call.Arguments[0] is not StringLiteral collection || (expected == 3 && call.Arguments[1] is not StringLiteral))
                    throw Error(s, scripts[s], call, usage);
                var fields = new List<string>();
                var spatial = new HashSet<string>(StringComparer.Ordinal);
                if (call.Arguments[^1] is not (ArrowFunctionExpression or FunctionExpression or Identifier))
                    throw Error(s, scripts[s], call, usage);
                // The literals' plain keys are known fields (spatial ones among them); whatever else a map returns is
                // collected when it runs, as RavenDB does (a built object, a switch, a computed key).
                foreach (var literal in ReturnedObjects(call.Arguments[^1]))
                {
                    foreach (var p in literal.Properties)
                    {
                        if (p is not Property { Computed: false } prop || KeyName(prop.Key) is not { } key || key == DynamicFieldsKey)
                            continue;
                        if (!fields.Contains(key))
                            fields.Add(key);
                        if (prop.Value is CallExpression { Callee: Identifier { Name: "createSpatialField" } })
                            spatial.Add(key);
                    }
                }
                found.Add((new IndexSource(kind, collection.Value, expected == 3 ? ((StringLiteral)call.Arguments[1]).Value : null), fields, spatial));
            }
        }
        if (found.Count == 0)
            throw new IndexCompilationException("A JavaScript index needs map('Collection', doc => ({ ... })).", "Maps", scripts.Count > 0 ? scripts[0] : "");
        List<string>? reduceFields = null;
        if (reduce != null)
        {
            Script ast;
            try
            {
                ast = new Acornima.Parser().ParseScript(reduce);
            }
            catch (Acornima.ParseErrorException e)
            {
                throw new IndexCompilationException($"Reduce, line {e.LineNumber}, column {e.Column}: {e.Description}", "Reduce", reduce);
            }
            var aggregate = Descendants(ast).OfType<CallExpression>().FirstOrDefault(c => c.Callee is MemberExpression { Property: Identifier { Name: "aggregate" } } && c.Arguments.Count == 1)
                ?? throw new IndexCompilationException("A JavaScript reduce is groupBy(x => x.Key).aggregate(g => ({ Key: g.key, ... })).", "Reduce", reduce);
            reduceFields = ReturnedObjects(aggregate.Arguments[0]).SelectMany(o => o.Properties).OfType<Property>().Select(p => KeyName(p.Key)).OfType<string>().Distinct().ToList();
            if (reduceFields.Count == 0)
                throw new IndexCompilationException("A JavaScript reduce's aggregate() must return an object literal: g => ({ Key: g.key, Count: g.values.length }).", "Reduce", reduce);
        }
        var runtime = new Runtime([.. additionalSources ?? [], .. scripts, .. reduce == null ? Array.Empty<string>() : [reduce]], reduce != null);
        runtime.Check(); // runs the scripts once, so that an error in them is found now
        return (found.Select(f => (ScriptMap)new JavaScriptMap(runtime, f.Source, f.Fields, f.Spatial)).ToList(),
            reduceFields == null ? null : new JavaScriptReduce(runtime, reduceFields));
    }

    /// <summary>The object literals a map function returns: its arrow body, its return statements, or the function given to a <c>.map()</c> there.</summary>
    private static IEnumerable<ObjectExpression> ReturnedObjects(Node function)
    {
        var body = function switch
        {
            ArrowFunctionExpression a => a.Body,
            FunctionExpression f => f.Body,
            _ => null,
        };
        if (body == null)
            yield break;
        var results = body is Expression e ? [e] : Descendants(body).OfType<ReturnStatement>().Where(r => r.Argument != null).Select(r => r.Argument!);
        foreach (var r in results)
        {
            if (r is ObjectExpression o)
                yield return o;
            else if (r is ArrayExpression arr)
                foreach (var item in arr.Elements.OfType<ObjectExpression>())
                    yield return item;
            else if (r is CallExpression { Callee: MemberExpression { Property: Identifier { Name: "map" or "flatMap" } } } inner && inner.Arguments.Count >= 1)
                foreach (var o2 in ReturnedObjects(inner.Arguments[0]))
                    yield return o2;
        }
    }

    private static string? KeyName(Node key) => key switch
    {
        Identifier i => i.Name,
        StringLiteral s => s.Value,
        _ => null,
    };

    private static IEnumerable<Node> Descendants(Node node)
    {
        yield return node;
        foreach (var child in node.ChildNodes)
            if (child != null)
                foreach (var d in Descendants(child))
                    yield return d;
    }

    private static IndexCompilationException Error(int map, string text, Node node, string message) =>
        new IndexCompilationException($"Map {map + 1}, line {node.Location.Start.Line}, column {node.Location.Start.Column + 1}: {message}", "Maps", text);

    /// <summary>One Jint engine per thread (an engine is not thread-safe), each with the scripts run once.</summary>
    internal sealed class Runtime(IReadOnlyList<string> scripts, bool reduce) : IDisposable
    {
        private readonly ThreadLocal<(Engine Engine, Dictionary<string, JsValue> Maps)> _engines = new(() => Create(scripts, reduce));

        public (Engine Engine, Dictionary<string, JsValue> Maps) Current => _engines.Value;

        /// <summary>The reduce's key function (<c>@groupBy</c>) and aggregate function (<c>@aggregate</c>) are kept among the maps under these names.</summary>
        public const string GroupByName = "@groupBy", AggregateName = "@aggregate";

        public void Dispose() => _engines.Dispose();

        public void Check()
        {
            try
            {
                _ = _engines.Value;
            }
            catch (Exception e) when (e is Jint.Runtime.JavaScriptException or Acornima.ParseErrorException or InvalidOperationException)
            {
                throw new IndexCompilationException("The JavaScript index failed when it was loaded: " + e.Message, "Maps", string.Join("\n", scripts));
            }
        }

        private static (Engine, Dictionary<string, JsValue>) Create(IReadOnlyList<string> scripts, bool reduce)
        {
            var engine = CreateEngine();
            var maps = new Dictionary<string, JsValue>(StringComparer.OrdinalIgnoreCase);
            engine.SetValue("map", new Action<string, JsValue>((collection, fn) => maps[collection] = fn));
            foreach (var (global, kind) in new[] { ("counters", IndexSourceType.Counters), ("timeSeries", IndexSourceType.TimeSeries), ("timeseries", IndexSourceType.TimeSeries) })
            {
                // counters.map('Companies', ['Likes',] fn) / timeSeries.map(..): registered under the source's encoded name.
                var items = new JsObject(engine);
                items.Set("map", JsValue.FromObject(engine, new Action<JsValue, JsValue, JsValue>((collection, nameOrFn, fn) =>
                {
                    bool named = nameOrFn.IsString();
                    maps[new IndexSource(kind, collection.ToString(), named ? nameOrFn.AsString() : null).Encode()] = named ? fn : nameOrFn;
                })));
                engine.SetValue(global, items);
            }
            engine.SetValue("cmpxchg", new Func<JsValue, JsValue>(key => key.IsString() && ScriptContext.CompareExchange(key.AsString()) is { ValueKind: not JsonValueKind.Null } value
                ? new JsonParser(engine).Parse(value.GetRawText()) : JsValue.Null));
            engine.SetValue("counterNamesFor", new Func<JsValue, JsValue>(doc => MetadataList(engine, doc, "@counters")));
            engine.SetValue("timeSeriesNamesFor", new Func<JsValue, JsValue>(doc => MetadataList(engine, doc, "@timeseries")));
            engine.SetValue("id", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o && o.Get("@metadata") is ObjectInstance m ? m.Get("@id") : JsValue.Null));
            engine.SetValue("getMetadata", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o ? o.Get("@metadata") : JsValue.Null));
            engine.SetValue("load", new Func<JsValue, JsValue, JsValue>((id, collection) => Load(engine, id, collection, tracked: true)));
            var noTracking = new JsObject(engine);
            noTracking.Set("load", JsValue.FromObject(engine, new Func<JsValue, JsValue, JsValue>((id, collection) => Load(engine, id, collection, tracked: false))));
            engine.SetValue("noTracking", noTracking);
            engine.SetValue("attachmentsFor", new Func<JsValue, JsValue>(doc => AttachmentsFor(engine, doc)));
            engine.SetValue("loadAttachment", new Func<JsValue, JsValue, JsValue>((doc, name) => LoadAttachment(engine, doc, name)));
            engine.SetValue("loadAttachments", new Func<JsValue, JsValue>(doc => new JsArray(engine, AttachmentsFor(engine, doc)
                .Select(a => a is ObjectInstance o ? LoadAttachment(engine, doc, o.Get("Name")) : JsValue.Null).ToArray())));
            engine.SetValue("createSpatialField", new Func<JsValue, JsValue, JsValue>((a, b) => Spatial(engine, a, b)));
            engine.SetValue("createField", new Func<JsValue, JsValue, JsValue, JsValue>((name, value, options) => CreatedField(engine, name, value, options)));
            engine.SetValue("groupBy", new Func<JsValue, JsValue>(key =>
            {
                maps[GroupByName] = key;
                var grouping = new JsObject(engine);
                grouping.Set("aggregate", JsValue.FromObject(engine, new Func<JsValue, JsValue>(fn =>
                {
                    maps[AggregateName] = fn;
                    return JsValue.Undefined;
                })));
                return grouping;
            }));
            foreach (string script in scripts)
                engine.Execute(script);
            if (reduce && (!maps.ContainsKey(GroupByName) || !maps.ContainsKey(AggregateName)))
                throw new InvalidOperationException("the reduce must call groupBy(x => x.Key).aggregate(g => ({ ... }))");
            engine.Constraints.Reset();
            return (engine, maps);
        }

        /// <summary>counterNamesFor(doc) / timeSeriesNamesFor(doc): the names the document's metadata lists (an empty array when none).</summary>
        private static JsArray MetadataList(Engine engine, JsValue doc, string key) =>
            doc is ObjectInstance o && o.Get("@metadata") is ObjectInstance meta && meta.Get(key) is JsArray list ? new JsArray(engine, list.ToArray()) : new JsArray(engine);

        private static JsValue Load(Engine engine, JsValue id, JsValue collection, bool tracked)
        {
            if (id is null || !id.IsString() || ScriptContext.Load(id.AsString(), collection is not null && collection.IsString() ? collection.AsString() : null, tracked) is not DynamicJsonObject doc)
                return JsValue.Null;
            return Document(engine, doc.Element, doc.DocumentId!);
        }

        /// <summary>attachmentsFor(doc): the document's attachments as its metadata lists them, <c>[{Name, Hash, ContentType, Size}]</c>.</summary>
        private static JsArray AttachmentsFor(Engine engine, JsValue doc)
        {
            if (doc is not ObjectInstance o || o.Get("@metadata") is not ObjectInstance meta || meta.Get("@attachments") is not JsArray list)
                return new JsArray(engine);
            return new JsArray(engine, list.Select(a => a is ObjectInstance item ? Attachment(engine, item) : JsValue.Null).ToArray());
        }

        /// <summary>
        /// loadAttachment(doc, name): the attachment's Name, ContentType, Hash and Size, and <c>getContentAsString([encoding])</c>
        /// (UTF-8 unless 'utf16'/'unicode', 'ascii' or 'latin1' is named); null when the document has no such attachment.
        /// </summary>
        private static JsValue LoadAttachment(Engine engine, JsValue doc, JsValue name)
        {
            if (name is null || !name.IsString()) // Jint passes null for an argument not given
                return JsValue.Null;
            var item = AttachmentsFor(engine, doc).OfType<ObjectInstance>().FirstOrDefault(a => a.Get("Name").IsString() && a.Get("Name").AsString() == name.AsString());
            if (item == null)
                return JsValue.Null;
            var result = Attachment(engine, item);
            string? hash = item.Get("Hash").IsString() ? item.Get("Hash").AsString() : null;
            result.Set("getContentAsString", JsValue.FromObject(engine, new Func<JsValue, JsValue>(encoding =>
            {
                if (hash == null || ScriptContext.AttachmentContent(hash) is not { } bytes)
                    return JsValue.Null;
                var decoder = (encoding is not null && encoding.IsString() ? encoding.AsString().ToLowerInvariant() : "utf8") switch
                {
                    "utf16" or "unicode" => Encoding.Unicode,
                    "ascii" => Encoding.ASCII,
                    "latin1" => Encoding.Latin1,
                    _ => Encoding.UTF8,
                };
                return decoder.GetString(bytes);
            })));
            return result;
        }

        private static JsObject Attachment(Engine engine, ObjectInstance item)
        {
            var result = new JsObject(engine);
            foreach (string name in new[] { "Name", "Hash", "ContentType", "Size" })
                result.Set(name, item.Get(name));
            return result;
        }

        private static JsValue Spatial(Engine engine, JsValue a, JsValue b)
        {
            object shape = b is null || b.IsUndefined() ? CSharpIndexScript.SpatialField(ToClr(a)) : CSharpIndexScript.SpatialField(ToClr(a), ToClr(b));
            if (shape is not SpatialValue v)
                return JsValue.Null;
            var o = new JsObject(engine);
            o.Set(SpatialMarker, v.Wkt);
            return o;
        }

        /// <summary>createField(name, value, { indexing, storage, termVector }): an object the entry conversion reads as a <see cref="DynamicField"/>.</summary>
        private static JsObject CreatedField(Engine engine, JsValue name, JsValue value, JsValue options)
        {
            var (indexing, stored) = FieldOptions(options, "createField");
            var field = DynamicField.Create(name.IsString() ? name.AsString() : ToClr(name), null, indexing, stored); // checks the name
            var marker = new JsObject(engine);
            marker.Set(FieldMarker, field.Name);
            marker.Set("value", value);
            if (indexing is { } ix)
                marker.Set("indexing", ix.ToString());
            marker.Set("stored", stored);
            return marker;
        }

        private static object? ToClr(JsValue? v) => v switch
        {
            null => null,
            _ when v.IsNull() || v.IsUndefined() => null,
            _ when v.IsNumber() => v.AsNumber(),
            _ when v.IsString() => v.AsString(),
            _ => v.ToString(),
        };
    }

    /// <summary>
    /// A Jint engine for index code and query projections: property reads on null or undefined give them back
    /// (o.Address.City on an order without an address is undefined, as in RavenDB); each run limited in statements,
    /// recursion, time and memory (reset the constraints before each run).
    /// </summary>
    internal static Engine CreateEngine(int maxStatements = MaxStatements, TimeSpan? timeout = null) =>
        new(o => o.Strict(false).MaxStatements(maxStatements).LimitRecursion(MaxRecursion).TimeoutInterval(timeout ?? Timeout).LimitMemory(MaxMemory)
            .SetReferencesResolver(Jint.Runtime.Interop.NullPropagatingReferenceResolver.Instance, Jint.Runtime.Interop.ReferenceResolverInterests.NullishPropertyBase));

    /// <summary>A document as a JavaScript object, its id in <c>@metadata.@id</c>.</summary>
    internal static JsValue Document(Engine engine, JsonElement json, string id) => Document(engine, System.Runtime.InteropServices.JsonMarshal.GetRawUtf8Value(json), id);

    /// <summary>The map function's kind of source: <c>map</c> (documents), <c>counters.map</c> or <c>timeSeries.map</c>; null for any other call.</summary>
    private static IndexSourceType? SourceKind(Expression callee) => callee switch
    {
        Identifier { Name: "map" } => IndexSourceType.Documents,
        MemberExpression { Object: Identifier { Name: "counters" }, Property: Identifier { Name: "map" } } => IndexSourceType.Counters,
        MemberExpression { Object: Identifier { Name: "timeSeries" or "timeseries" }, Property: Identifier { Name: "map" } } => IndexSourceType.TimeSeries,
        _ => null,
    };

    /// <summary>
    /// A counter or time-series item (<see cref="IndexItems"/>) as a JavaScript object; a series' times (<c>Start</c>,
    /// <c>End</c>, each entry's <c>Timestamp</c>) as Dates, as RavenDB hands them to maps.
    /// </summary>
    internal static JsValue Item(Engine engine, JsonElement json, IndexSourceType kind)
    {
        var value = new JsonParser(engine).Parse(json.GetRawText());
        if (kind != IndexSourceType.TimeSeries || value is not ObjectInstance o)
            return value;
        static void ToDate(Engine engine, ObjectInstance target, string name)
        {
            if (target.Get(name) is { } v && v.IsString() && DateTime.TryParse(v.AsString(), CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t))
                target.Set(name, JsValue.FromObject(engine, t));
        }
        ToDate(engine, o, "Start");
        ToDate(engine, o, "End");
        if (o.Get("Entries") is JsArray entries)
            foreach (var e in entries)
                if (e is ObjectInstance entry)
                    ToDate(engine, entry, "Timestamp");
        return value;
    }

    /// <summary>A document (JSON text) as a JavaScript object, its id in <c>@metadata.@id</c>.</summary>
    internal static JsValue Document(Engine engine, string json, string id) => Document(engine, Encoding.UTF8.GetBytes(json), id);

    /// <summary>A document (UTF-8 JSON) as a JavaScript object, its id in <c>@metadata.@id</c>.</summary>
    internal static JsValue Document(Engine engine, ReadOnlySpan<byte> json, string id)
    {
        var value = JsonToJs.Parse(engine, json);
        if (value is ObjectInstance o)
        {
            if (o.Get("@metadata") is not ObjectInstance meta)
            {
                meta = new JsObject(engine);
                o.Set("@metadata", meta);
            }
            meta.Set("@id", id);
        }
        return value;
    }

    /// <summary>A value a map returned, as <see cref="EntryValues.Write"/> takes it.</summary>
    internal static object? ToEntryValue(Engine engine, JsValue v)
    {
        if (v.IsUndefined())
            return DynamicNull.Missing;
        if (v.IsNull())
            return null;
        if (v.IsString())
            return v.AsString();
        if (v.IsBoolean())
            return v.AsBoolean();
        if (v.IsNumber())
        {
            double d = v.AsNumber();
            return d == Math.Floor(d) && Math.Abs(d) < 9007199254740992 ? (long)d : d;
        }
        if (v.IsArray())
        {
            var list = new List<object?>();
            foreach (var item in v.AsArray())
                list.Add(ToEntryValue(engine, item));
            return list;
        }
        if (v is ObjectInstance o && o.HasOwnProperty(SpatialMarker))
            return new SpatialValue(o.Get(SpatialMarker).AsString());
        if (v is ObjectInstance f && f.HasOwnProperty(FieldMarker))
            return DynamicField.Create(f.Get(FieldMarker).AsString(), ToEntryValue(engine, f.Get("value")),
                f.Get("indexing") is { } ix && ix.IsString() ? Enum.Parse<FieldIndexing>(ix.AsString()) : null, f.Get("stored").IsBoolean() && f.Get("stored").AsBoolean());
        if (v is ObjectInstance)
        {
            string json = new Jint.Native.Json.JsonSerializer(engine).Serialize(v).AsString();
            using var doc = JsonDocument.Parse(json);
            return doc.RootElement.Clone();
        }
        return v.ToString();
    }

    /// <summary>
    /// RavenDB's <c>{$value, $name, $options: {indexing, storage}}</c> dynamic field (or a createField() result) as a
    /// <see cref="DynamicField"/>; anything else is an error of the document's map.
    /// </summary>
    internal static DynamicField NamedField(Engine engine, JsValue item)
    {
        if (ToEntryValue(engine, item) is DynamicField created)
            return created;
        if (item is not ObjectInstance o || !o.HasOwnProperty("$name"))
            throw new ArgumentException("the _ property holds dynamic fields: { $name: 'Field', $value: value, $options: { indexing, storage } }, or an array of them.");
        var (indexing, stored) = FieldOptions(o.Get("$options"), "dynamic field");
        var name = o.Get("$name");
        return DynamicField.Create(name.IsString() ? name.AsString() : ToClrName(name), ToEntryValue(engine, o.Get("$value")), indexing, stored);
    }

    /// <summary>A dynamic field's <c>{ indexing, storage }</c> options (either form: createField's or <c>$options</c>).</summary>
    internal static (FieldIndexing? Indexing, bool Stored) FieldOptions(JsValue? options, string what)
    {
        if (options is not ObjectInstance o)
            return (null, false);
        FieldIndexing? indexing = null;
        var i = o.Get("indexing");
        if (i.IsString())
            indexing = Enum.TryParse<FieldIndexing>(i.AsString(), true, out var parsed) ? parsed
                : throw new ArgumentException($"{what}: indexing '{i.AsString()}' is not Default, Exact or Search.");
        var st = o.Get("storage");
        return (indexing, st.IsBoolean() ? st.AsBoolean() : st.IsString() && string.Equals(st.AsString(), "Yes", StringComparison.OrdinalIgnoreCase));
    }

    private static string? ToClrName(JsValue v) => v.IsNull() || v.IsUndefined() ? null : v.ToString();

    /// <summary>A JavaScript value as JSON (UTF-8).</summary>
    internal static byte[] JsonOf(Engine engine, JsValue value) => System.Text.Encoding.UTF8.GetBytes(new Jint.Native.Json.JsonSerializer(engine).Serialize(value).AsString());
}

/// <summary>One <c>map()</c> of a JavaScript index.</summary>
internal sealed class JavaScriptMap(JavaScriptIndex.Runtime runtime, IndexSource source, IReadOnlyList<string> fields, IReadOnlySet<string> spatial) : ScriptMap
{
    public override IndexSource Source => source;

    public override IReadOnlyList<string> Fields => fields;

    public override IReadOnlySet<string> SpatialFields => spatial;

    public override void Map(JsonElement document, string id, List<object?>[] values, List<object?> runtimeFields)
    {
        var (engine, maps) = runtime.Current;
        var fn = maps[source.Encode()];
        engine.Constraints.Reset();
        try
        {
            var result = engine.Invoke(fn, Argument(engine, document, id));
            if (result.IsArray())
            {
                foreach (var item in result.AsArray())
                    Add(engine, item, values, runtimeFields);
            }
            else
            {
                Add(engine, result, values, runtimeFields); // null or undefined: no entry
            }
        }
        finally
        {
            engine.Advanced.ResetCallStack();
        }
    }

    public override void MapResults(JsonElement document, string id, List<byte[]> results)
    {
        var (engine, maps) = runtime.Current;
        engine.Constraints.Reset();
        try
        {
            var result = engine.Invoke(maps[source.Encode()], Argument(engine, document, id));
            foreach (var item in result.IsArray() ? result.AsArray().ToArray() : [result])
                if (item is ObjectInstance)
                    results.Add(JavaScriptIndex.JsonOf(engine, item));
        }
        finally
        {
            engine.Advanced.ResetCallStack();
        }
    }

    /// <summary>What the map function is given: the document, or the counter or time-series item.</summary>
    private JsValue Argument(Engine engine, JsonElement document, string id) =>
        source.Kind == IndexSourceType.Documents ? JavaScriptIndex.Document(engine, document, id) : JavaScriptIndex.Item(engine, document, source.Kind);

    /// <summary>
    /// One returned entry: its known fields' values, and each other own property as a field named at run time; the
    /// <c>_</c> property holds RavenDB's dynamic fields (<c>{$value, $name, $options}</c>, one or an array).
    /// </summary>
    private void Add(Engine engine, JsValue entry, List<object?>[] values, List<object?> runtimeFields)
    {
        if (entry is not ObjectInstance o)
            return;
        foreach (var key in o.GetOwnPropertyKeys(Jint.Runtime.Types.String))
        {
            string name = key.AsString();
            var v = o.Get(name);
            if (v.IsUndefined())
                continue;
            int known = IndexOf(name);
            if (known >= 0)
                values[known].Add(JavaScriptIndex.ToEntryValue(engine, v));
            else if (name == JavaScriptIndex.DynamicFieldsKey)
                foreach (var item in v.IsArray() ? v.AsArray().ToArray() : [v])
                    runtimeFields.Add(JavaScriptIndex.NamedField(engine, item));
            else
                runtimeFields.Add(DynamicField.Create(name, JavaScriptIndex.ToEntryValue(engine, v), null, false));
        }
    }

    private int IndexOf(string name)
    {
        for (int i = 0; i < fields.Count; i++)
            if (fields[i] == name)
                return i;
        return -1;
    }
}

/// <summary>The reduce of a JavaScript map-reduce index: <c>groupBy(x =&gt; x.Key).aggregate(g =&gt; ({ ... }))</c>, where <c>g.key</c> is the key and <c>g.values</c> the map results.</summary>
internal sealed class JavaScriptReduce(JavaScriptIndex.Runtime runtime, IReadOnlyList<string> fields) : ScriptReduce
{
    public override IReadOnlyList<string> Fields => fields;

    public override string KeyOf(JsonElement mapResult)
    {
        var (engine, maps) = runtime.Current;
        engine.Constraints.Reset();
        try
        {
            var key = engine.Invoke(maps[JavaScriptIndex.Runtime.GroupByName], new JsonParser(engine).Parse(mapResult.GetRawText()));
            return key.IsUndefined() ? "null" : System.Text.Encoding.UTF8.GetString(JavaScriptIndex.JsonOf(engine, key));
        }
        finally
        {
            engine.Advanced.ResetCallStack();
        }
    }

    public override void Reduce(IReadOnlyList<JsonElement> mapResults, List<byte[]> outputs)
    {
        if (mapResults.Count == 0)
            return;
        var (engine, maps) = runtime.Current;
        engine.Constraints.Reset();
        try
        {
            var values = new JsArray(engine, mapResults.Select(r => new JsonParser(engine).Parse(r.GetRawText())).ToArray());
            var group = new JsObject(engine);
            group.Set("key", engine.Invoke(maps[JavaScriptIndex.Runtime.GroupByName], values[0]));
            group.Set("values", values);
            var result = engine.Invoke(maps[JavaScriptIndex.Runtime.AggregateName], group);
            foreach (var item in result.IsArray() ? result.AsArray().ToArray() : [result])
                if (item is ObjectInstance)
                    outputs.Add(JavaScriptIndex.JsonOf(engine, item));
        }
        finally
        {
            engine.Advanced.ResetCallStack();
        }
    }
}
