using Jint;
using Jint.Native;
using Jint.Native.Json;
using Jint.Native.Object;
using JsObject = Jint.Native.JsObject;
using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;
using JsonSerializer = System.Text.Json.JsonSerializer;

namespace RavenLite.Server.Queries;

/// <summary>
/// A JavaScript projection (RavenDB's <c>select { ... }</c>, <c>declare function</c> and <c>load x as y</c>) run in Jint
/// for each answered document: the document is the query's alias (and <c>this</c>-less code may use the alias only),
/// loaded documents are bound to their names, <c>$parameters</c> are variables, and <c>id()</c>, <c>load()</c>, <c>cmpxchg()</c>,
/// <c>counter(doc, name)</c>, <c>counterRaw(doc, name)</c>, <c>includes.cmpxchg(key)</c>, <c>includes.document(id)</c> and
/// <c>getMetadata()</c> are available. Property reads on null or undefined give them back; each document's run is
/// limited in statements, recursion, time and memory. An error in the script is a 400 naming it.
/// </summary>
internal sealed class JavaScriptProjection : IDisposable
{
    private const string Root = "__doc";
    private readonly Engine _engine;
    private readonly string _script;
    private readonly RqlQuery _query;
    private readonly Func<string, StoredDocument?> _load;

    public JavaScriptProjection(RqlQuery query, JsonElement parameters, Func<string, StoredDocument?> load, Func<string, JsonElement> compareExchange,
        Func<string, string, bool, JsonElement>? counter = null)
    {
        _query = query;
        _load = load;
        _engine = Indexing.Scripting.JavaScriptIndex.CreateEngine();
        _engine.SetValue("load", new Func<JsValue, JsValue>(id => id is not null && id.IsString() && _load(id.AsString()) is { } d ? Parse(d) : JsValue.Null));
        _engine.SetValue("id", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o && o.Get("@metadata") is ObjectInstance m ? m.Get("@id") : JsValue.Null));
        _engine.SetValue("cmpxchg", new Func<JsValue, JsValue>(key => key is not null && key.IsString()
            ? new JsonParser(_engine).Parse(compareExchange(key.AsString()).GetRawText()) : JsValue.Null));
        if (counter != null)
        {
            // counter(doc, 'Name') / counterRaw(doc, 'Name'): the document's counter (null when missing).
            JsValue Counter(JsValue doc, JsValue name, bool raw) =>
                doc is ObjectInstance o && o.Get("@metadata") is ObjectInstance m && m.Get("@id") is { } id && id.IsString() && name is not null && name.IsString()
                    ? new JsonParser(_engine).Parse(counter(id.AsString(), name.AsString(), raw).GetRawText()) : JsValue.Null;
            _engine.SetValue("counter", new Func<JsValue, JsValue, JsValue>((d, n) => Counter(d, n, false)));
            _engine.SetValue("counterRaw", new Func<JsValue, JsValue, JsValue>((d, n) => Counter(d, n, true)));
        }
        _engine.SetValue("getMetadata", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o ? o.Get("@metadata") : JsValue.Null));
        // includes.cmpxchg(key) / includes.document(id): the answer includes them, as the query's include clause would.
        var includes = new JsObject(_engine);
        includes.Set("cmpxchg", JsValue.FromObject(_engine, new Func<JsValue, JsValue>(key =>
        {
            if (key is not null && key.IsString())
                IncludedCompareExchange.Add(key.AsString());
            return key ?? JsValue.Undefined;
        })));
        includes.Set("document", JsValue.FromObject(_engine, new Func<JsValue, JsValue>(id =>
        {
            if (id is not null && id.IsString())
                IncludedDocuments.Add(id.AsString());
            return id ?? JsValue.Undefined;
        })));
        _engine.SetValue("includes", includes);
        if (parameters.ValueKind == JsonValueKind.Object)
            foreach (var p in parameters.EnumerateObject())
                _engine.SetValue("$" + p.Name, new JsonParser(_engine).Parse(p.Value.GetRawText()));
        try
        {
            foreach (string declared in query.Declared)
                _engine.Execute(declared);
            _engine.Constraints.Reset();
        }
        catch (Exception e) when (e is Jint.Runtime.JavaScriptException or Acornima.ParseErrorException)
        {
            throw new InvalidQueryException("The query's declared function does not run: " + e.Message);
        }
        _script = query.SelectScript ?? ObjectLiteral(query);
    }

    /// <summary>The compare-exchange keys the projections so far included (<c>includes.cmpxchg</c>); the caller takes them.</summary>
    public List<string> IncludedCompareExchange { get; } = [];

    /// <summary>The document ids the projections so far included (<c>includes.document</c>); the caller takes them.</summary>
    public List<string> IncludedDocuments { get; } = [];

    public void Dispose() => _engine.Dispose();

    /// <summary>The select fields as a JavaScript object literal, reading loaded documents by their names.</summary>
    private static string ObjectLiteral(RqlQuery query)
    {
        var loads = query.Loads.Select(l => l.Name).ToHashSet(StringComparer.Ordinal);
        var members = query.Select.Select(f =>
        {
            string value;
            if (f.Path.IsId)
                value = $"id({Root})";
            else if (f.Path.Parts.Count > 1 && loads.Contains(f.Path.Parts[0]))
                value = f.Path.Parts[0] + string.Concat(f.Path.Parts.Skip(1).Select(p => $"[{JsonSerializer.Serialize(p)}]"));
            else if (f.Path.Parts.Count == 1 && loads.Contains(f.Path.Parts[0]))
                value = f.Path.Parts[0];
            else
                value = Root + string.Concat(f.Path.Parts.Select(p => $"[{JsonSerializer.Serialize(p)}]"));
            return $"{JsonSerializer.Serialize(f.Alias)}: {value}";
        });
        return "({ " + string.Join(", ", members) + " })";
    }

    private JsValue Parse(StoredDocument doc) => Indexing.Scripting.JavaScriptIndex.Document(_engine, doc.Json, doc.Id);

    /// <summary>The projection of one answered document, with RavenDB's projection metadata.</summary>
    public byte[] Project(StoredDocument doc, JsonElement json)
    {
        _engine.Constraints.Reset();
        JsValue result;
        try
        {
            var root = Parse(doc);
            _engine.SetValue(Root, root);
            if (_query.Alias != null)
                _engine.SetValue(_query.Alias, root);
            foreach (var load in _query.Loads)
            {
                var ids = new List<JsonElement>();
                JsonPaths.Walk(json, load.Path.Parts, 0, ids);
                var loaded = ids.Where(i => i.ValueKind == JsonValueKind.String).Select(i => _load(i.GetString()!) is { } d ? Parse(d) : JsValue.Null).ToArray();
                _engine.SetValue(load.Name, JsonPaths.PassesArray(json, load.Path.Parts) ? new Jint.Native.JsArray(_engine, loaded) : loaded.FirstOrDefault() ?? JsValue.Null);
            }
            result = _engine.Evaluate(_script);
        }
        catch (Exception e) when (e is Jint.Runtime.JavaScriptException or Acornima.ParseErrorException or Jint.Runtime.StatementsCountOverflowException
            or Jint.Runtime.RecursionDepthOverflowException or TimeoutException or Jint.Runtime.MemoryLimitExceededException)
        {
            throw new InvalidQueryException($"The query's projection failed for '{doc.Id}': {e.Message}");
        }
        finally
        {
            _engine.Advanced.ResetCallStack();
        }
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            if (result is ObjectInstance && !result.IsArray())
            {
                using var parsed = JsonDocument.Parse(new Jint.Native.Json.JsonSerializer(_engine).Serialize(result).AsString());
                foreach (var p in parsed.RootElement.EnumerateObject())
                    if (p.Name != "@metadata")
                        p.WriteTo(w);
            }
            else if (!result.IsUndefined())
            {
                w.WritePropertyName("Result");
                using var parsed = JsonDocument.Parse(new Jint.Native.Json.JsonSerializer(_engine).Serialize(result).AsString());
                parsed.RootElement.WriteTo(w);
            }
            w.WriteStartObject("@metadata");
            w.WriteBoolean("@projection", true);
            if (doc.Id.Length > 0)
                w.WriteString("@id", doc.Id);
            if (doc.ChangeVector.Length > 0)
                w.WriteString("@change-vector", doc.ChangeVector);
            if (doc.Collection != Collections.Empty)
                w.WriteString("@collection", doc.Collection);
            w.WriteString("@last-modified", JsonDates.FormatDate(doc.LastModified));
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }
}
