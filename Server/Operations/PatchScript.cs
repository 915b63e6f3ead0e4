using Jint;
using Jint.Native;
using Jint.Native.Json;
using Jint.Native.Object;
using RavenLite.Server.Documents;
using RavenLite.Server.Indexing.Scripting;

namespace RavenLite.Server.Operations;

/// <summary>
/// A RavenDB patch script (the body of RQL's <c>update { ... }</c>) run in Jint on one document at a time: <c>this</c>
/// is the document (its <c>@metadata</c> included), query parameters are <c>$name</c> variables and <c>args.name</c>,
/// and <c>load(id)</c>, <c>id(doc)</c>, <c>getMetadata(doc)</c>, <c>put(id, doc)</c>, <c>del(id)</c> and
/// <c>output(value)</c> are available (put and del are recorded in <see cref="Effects"/> for the caller to apply in
/// the patch's transaction). Each run is limited in statements,
/// recursion, time and memory (<see cref="PatchLimits"/>: settings PatchMaxStatements and PatchTimeoutMs). Not thread-safe: one per worker.
/// </summary>
internal sealed class PatchScript : IDisposable
{
    private const string Function = "__ravenlite_patch";
    private readonly Engine _engine;
    private readonly JsValue _function;
    private readonly JsValue _args;
    private Func<string, StoredDocument?> _load = _ => null;

    /// <summary>The last run's put(id, doc), del(id), incrementCounter(..) and deleteCounter(..), in order.</summary>
    public List<PatchEffect> Effects { get; } = [];

    private Func<string, string, long?> _counter = (_, _) => null;

    /// <summary>The last run's output(...) values.</summary>
    public List<string> Output { get; } = [];

    private PatchScript(string body, JsonElement parameters, PatchLimits limits)
    {
        _engine = JavaScriptIndex.CreateEngine(limits.MaxStatements, limits.Timeout);
        _engine.SetValue("load", new Func<JsValue, JsValue>(id => id is not null && id.IsString() && _load(id.AsString()) is { } d ? Parse(d) : JsValue.Null));
        _engine.SetValue("id", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o && o.Get("@metadata") is ObjectInstance m ? m.Get("@id") : JsValue.Null));
        _engine.SetValue("getMetadata", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o ? o.Get("@metadata") : JsValue.Null));
        // put(id, doc) and del(id) change other documents in the same transaction as the patched one (recorded here,
        // applied by the caller); output(x) adds to the debug output.
        _engine.SetValue("put", new Func<JsValue, JsValue, JsValue>((id, doc) =>
        {
            if (id is null || !id.IsString() || id.AsString().Length == 0)
                throw new ArgumentException("put(id, document): the id must be non-empty text.");
            if (doc is not ObjectInstance || doc.IsArray())
                throw new ArgumentException($"put('{id.AsString()}', document): the document must be an object.");
            Effects.Add(new PatchEffect(id.AsString(), System.Text.Encoding.UTF8.GetBytes(new Jint.Native.Json.JsonSerializer(_engine).Serialize(doc).AsString())));
            return id;
        }));
        _engine.SetValue("del", new Func<JsValue, JsValue>(id =>
        {
            if (id is null || !id.IsString() || id.AsString().Length == 0)
                throw new ArgumentException("del(id): the id must be non-empty text.");
            Effects.Add(new PatchEffect(id.AsString(), null));
            return JsValue.Undefined;
        }));
        // Counters of the patched or another document (RavenDB's incrementCounter, deleteCounter, counter): a change
        // is an effect applied after the document; a read sees the counter as the script started.
        _engine.SetValue("incrementCounter", new Func<JsValue, JsValue, JsValue, JsValue>((doc, name, value) =>
        {
            long delta = value is null || value.IsUndefined() ? 1 : value.IsNumber() && value.AsNumber() == Math.Floor(value.AsNumber()) && Math.Abs(value.AsNumber()) < 9.2e18
                ? (long)value.AsNumber() : throw new ArgumentException("incrementCounter(doc, name, value): the value must be a whole number.");
            Effects.Add(new PatchEffect(CounterTarget(doc, "incrementCounter"), null, CounterName(name, "incrementCounter"), delta));
            return JsValue.Undefined;
        }));
        _engine.SetValue("deleteCounter", new Func<JsValue, JsValue, JsValue>((doc, name) =>
        {
            Effects.Add(new PatchEffect(CounterTarget(doc, "deleteCounter"), null, CounterName(name, "deleteCounter"), 0, DeleteCounter: true));
            return JsValue.Undefined;
        }));
        _engine.SetValue("counter", new Func<JsValue, JsValue, JsValue>((doc, name) =>
            _counter(CounterTarget(doc, "counter"), CounterName(name, "counter")) is { } v ? JsValue.FromObject(_engine, v) : JsValue.Null));
        _engine.SetValue("output", new Action<JsValue>(v => Output.Add(v.IsString() ? v.AsString() : new Jint.Native.Json.JsonSerializer(_engine).Serialize(v).AsString())));
        _args = parameters.ValueKind == JsonValueKind.Object ? new JsonParser(_engine).Parse(parameters.GetRawText()) : new Jint.Native.JsObject(_engine);
        if (parameters.ValueKind == JsonValueKind.Object)
            foreach (var p in parameters.EnumerateObject())
                _engine.SetValue("$" + p.Name, new JsonParser(_engine).Parse(p.Value.GetRawText()));
        _engine.Execute($"function {Function}(args) {{\n{body}\n}}");
        _function = _engine.GetValue(Function);
    }

    /// <summary>
    /// Checks and prepares <paramref name="body"/>: a syntax error is a 400 (JavaScriptParseException) naming its line
    /// in <paramref name="queryText"/>, where the script starts at <paramref name="position"/>.
    /// </summary>
    public static PatchScript Create(string body, JsonElement parameters, string queryText, int position, PatchLimits limits)
    {
        try
        {
            new Acornima.Parser().ParseScript($"function f(args) {{\n{body}\n}}");
        }
        catch (Acornima.ParseErrorException e)
        {
            int scriptLine = e.LineNumber - 1; // the wrapper's first line
            int queryLine = queryText[..Math.Min(position, queryText.Length)].Count(c => c == '\n') + scriptLine;
            throw new BadRequestException($"The update script does not parse: line {queryLine}, column {e.Column}: {e.Description}", RavenExceptionTypes.JavaScriptParse);
        }
        return new PatchScript(body, parameters, limits);
    }

    /// <summary>
    /// Runs the script on <paramref name="doc"/>; the patched document's JSON, or null when the script left it as it was.
    /// Throws <see cref="PatchException"/> when the script fails for this document.
    /// </summary>
    public byte[]? Run(StoredDocument doc, Func<string, StoredDocument?> load, Func<string, string, long?>? counter = null)
    {
        _load = load;
        _counter = counter ?? ((_, _) => null);
        Effects.Clear();
        Output.Clear();
        _engine.Constraints.Reset();
        try
        {
            string before = Serialize(JavaScriptIndex.Document(_engine, doc.Json, doc.Id));
            var self = JavaScriptIndex.Document(_engine, doc.Json, doc.Id);
            _engine.Invoke(_function, self, [_args]);
            string after = Serialize(self);
            return after == before ? null : System.Text.Encoding.UTF8.GetBytes(after);
        }
        catch (Exception e) when (e is Jint.Runtime.JavaScriptException or Jint.Runtime.StatementsCountOverflowException or Jint.Runtime.RecursionDepthOverflowException
            or TimeoutException or Jint.Runtime.MemoryLimitExceededException or ArgumentException or InvalidOperationException)
        {
            throw new PatchException($"The update script failed for '{doc.Id}': {e.Message}", e);
        }
        finally
        {
            _engine.Advanced.ResetCallStack();
        }
    }

    /// <summary>The document a counter function names: a document object (its <c>@metadata.@id</c>) or an id.</summary>
    private static string CounterTarget(JsValue doc, string function) =>
        doc is ObjectInstance o && o.Get("@metadata") is ObjectInstance m && m.Get("@id") is { } id && id.IsString() ? id.AsString()
        : doc is not null && doc.IsString() && doc.AsString().Length > 0 ? doc.AsString()
        : throw new ArgumentException($"{function}(doc, name): doc must be a document or its id.");

    private static string CounterName(JsValue name, string function) =>
        name is not null && name.IsString() && name.AsString().Length > 0 ? name.AsString() : throw new ArgumentException($"{function}(doc, name): the counter name must be non-empty text.");

    /// <summary>A document as JSON without the <c>@metadata.@id</c> added for <c>id()</c> (the server keeps ids apart from the body).</summary>
    private string Serialize(JsValue document)
    {
        if (document is ObjectInstance o && o.Get("@metadata") is ObjectInstance meta)
            meta.RemoveOwnProperty("@id");
        return new Jint.Native.Json.JsonSerializer(_engine).Serialize(document).AsString();
    }

    private JsValue Parse(StoredDocument doc) => JavaScriptIndex.Document(_engine, doc.Json, doc.Id);

    public void Dispose() => _engine.Dispose();
}

/// <summary>How long a patch script may run per document: statements and time (settings PatchMaxStatements, PatchTimeoutMs).</summary>
internal readonly record struct PatchLimits(int MaxStatements, TimeSpan Timeout)
{
    /// <summary>The server's limits; with <paramref name="ignoreSteps"/> (RavenDB's ignoreMaxStepsForScript) no statement limit, the time limit stays.</summary>
    public static PatchLimits Of(Configuration.ServerOptions options, bool ignoreSteps = false) =>
        new(ignoreSteps ? int.MaxValue : options.PatchMaxStatements, TimeSpan.FromMilliseconds(options.PatchTimeoutMs));
}

/// <summary>
/// What a patch script asked beside changing its document: <see cref="Json"/> put (null: <see cref="Id"/> deleted), or,
/// with <see cref="Counter"/>, that counter of <see cref="Id"/> incremented by <see cref="Delta"/> or deleted.
/// </summary>
internal sealed record PatchEffect(string Id, byte[]? Json, string? Counter = null, long Delta = 0, bool DeleteCounter = false);

/// <summary>A patch script failed for one document.</summary>
internal sealed class PatchException(string message, Exception inner) : Exception(message, inner);
