using System.Text.RegularExpressions;
using Jint;
using Jint.Native;
using Jint.Native.Json;
using Jint.Native.Object;
using RavenLite.Server.Documents;
using RavenLite.Server.Indexing.Scripting;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Etl;

/// <summary>
/// A transformation's script as RavenDB's ETL runs it (docs/etl.md "Scripts"): the script's body runs once per document
/// with <c>this</c> the document; <c>loadTo&lt;Target&gt;(obj)</c> / <c>loadTo('Target', obj)</c> emit what is loaded;
/// <c>load(id)</c>, <c>id(doc)</c>, <c>getMetadata(doc)</c>, attachments, counters and time series of the document are
/// readable; the top-level functions <c>deleteDocumentsOf&lt;Collection&gt;Behavior(docId, deleted)</c> and
/// <c>deleteDocumentsBehavior(docId, collection, deleted)</c> decide whether a change deletes what was loaded before.
/// One instance per running transformation (a Jint engine is single-threaded).
/// </summary>
internal sealed partial class EtlScript
{
    private const string Function = "__ravenlite_etl";
    private const int MaxStatements = 100_000;
    private static readonly TimeSpan Timeout = TimeSpan.FromSeconds(5);

    private readonly Engine _engine;
    private readonly JsValue _function;
    private readonly EtlKind _kind;
    private readonly string _transformation;
    private readonly JsonParser _parser;
    private readonly Jint.Native.Json.JsonSerializer _serializer;
    private readonly List<EtlLoad> _loads = [];
    private readonly List<string> _names = [];
    private readonly List<object?> _values = [];
    private readonly List<string[]> _columnSets = [];
    private const int MaxColumnSets = 64; // a script building column names from data would otherwise grow it without end
    private Context? _context;
    private readonly Jint.Constraints.MaxStatementsConstraint? _statements;
    private readonly Jint.Constraints.MemoryLimitConstraint? _memory;

    /// <summary>What the script reads beside the document: a snapshot of its database, and the document's extensions (read once per run).</summary>
    private sealed record Context(Transaction Tx, DocumentsStorage Documents, StoredDocument Document)
    {
        public DocumentExtras? Extras { get; } = DocumentExtras.Read(Document.Json);
    }

    [GeneratedRegex(@"\bloadTo([A-Za-z_$][\w$]*)\s*\(")]
    private static partial Regex NamedLoadTo();

    [GeneratedRegex(@"\bloadTo\s*\(\s*(['""])(.+?)\1")]
    private static partial Regex QuotedLoadTo();

    /// <summary>The targets (collections or tables) the script loads to, as written in its <c>loadTo</c> calls.</summary>
    public static IReadOnlyList<string> Targets(string script) =>
        [.. NamedLoadTo().Matches(script).Select(m => m.Groups[1].Value).Concat(QuotedLoadTo().Matches(script).Select(m => m.Groups[2].Value)).Distinct(StringComparer.OrdinalIgnoreCase)];

    /// <summary>The output(...) and console.log(...) values of the last run (the test endpoints show them).</summary>
    public List<string> DebugOutput { get; } = [];

    /// <summary>400 (JavaScriptParseException) when the script does not parse; 400 when an SQL script loads to a table the task does not name.</summary>
    public static void Check(EtlTask task, EtlTransformation transformation)
    {
        try
        {
            new Acornima.Parser().ParseScript(Wrap(transformation.Script));
        }
        catch (Acornima.ParseErrorException e)
        {
            throw new BadRequestException($"The script of transformation '{transformation.Name}' does not parse: line {e.LineNumber - 1}, column {e.Column}: {e.Description}", RavenExceptionTypes.JavaScriptParse);
        }
        if (task.Kind == EtlKind.Sql)
        {
            var targets = Targets(transformation.Script);
            if (targets.Count == 0)
                throw new BadRequestException($"The script of transformation '{transformation.Name}' loads nothing: call loadTo<Table>(row) for one of the SqlTables.");
            foreach (string t in targets)
                if (!task.SqlTables.Any(x => x.TableName.Equals(t, StringComparison.OrdinalIgnoreCase)))
                    throw new BadRequestException($"The script of transformation '{transformation.Name}' loads to table '{t}', which is not among the task's SqlTables ({string.Join(", ", task.SqlTables.Select(x => x.TableName))}).");
        }
    }

    private static string Wrap(string script) => $"function {Function}() {{\n{script}\n}}";

    /// <summary>
    /// The script's engine. Statements and memory are limited per run; the time limit per batch (<see cref="BeginBatch"/>):
    /// <see cref="Timeout"/> beyond <paramref name="batchTime"/>, the time a batch may spend reading (one timer per
    /// batch rather than per document).
    /// </summary>
    public EtlScript(EtlTask task, EtlTransformation transformation, TimeSpan batchTime = default)
    {
        _kind = task.Kind;
        _transformation = transformation.Name;
        _engine = JavaScriptIndex.CreateEngine(MaxStatements, Timeout + batchTime);
        _statements = _engine.Constraints.Find<Jint.Constraints.MaxStatementsConstraint>();
        _memory = _engine.Constraints.Find<Jint.Constraints.MemoryLimitConstraint>();
        _parser = new JsonParser(_engine);
        _serializer = new Jint.Native.Json.JsonSerializer(_engine);
        _engine.SetValue("loadTo", new Func<JsValue, JsValue, JsValue>((target, obj) =>
            target is not null && target.IsString() && target.AsString().Length > 0 ? LoadTo(target.AsString(), obj)
            : throw new ArgumentException("loadTo(target, obj): the target must be a collection or table name.")));
        foreach (string target in Targets(transformation.Script))
            if (IsIdentifier(target))
                _engine.SetValue("loadTo" + target, new Func<JsValue, JsValue>(obj => LoadTo(target, obj)));
        _engine.SetValue("load", new Func<JsValue, JsValue>(id =>
            id is not null && id.IsString() && Current.Documents.Get(Current.Tx, id.AsString()) is { } d ? JavaScriptIndex.Document(_engine, d.Json, d.Id) : JsValue.Null));
        _engine.SetValue("id", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o && o.Get("@metadata") is ObjectInstance m ? m.Get("@id") : JsValue.Null));
        _engine.SetValue("getMetadata", new Func<JsValue, JsValue>(doc => doc is ObjectInstance o ? o.Get("@metadata") : JsValue.Null));
        _engine.SetValue("getAttachments", new Func<JsValue>(() => _parser.Parse(AttachmentsJson())));
        _engine.SetValue("hasAttachment", new Func<JsValue, bool>(name => name is not null && name.IsString() && Extras()?.Attachments.ContainsKey(name.AsString()) == true));
        _engine.SetValue("loadAttachment", new Func<JsValue, JsValue>(name =>
            name is not null && name.IsString() && Extras()?.Attachments.TryGetValue(name.AsString(), out var a) == true ? Reference("$attachment", a!.Name) : JsValue.Null));
        _engine.SetValue("getCounters", new Func<JsValue>(() => JsValue.FromObject(_engine, Extras()?.Counters.ToArray() ?? [])));
        _engine.SetValue("hasCounter", new Func<JsValue, bool>(name => name is not null && name.IsString() && Extras()?.Counters.Contains(name.AsString()) == true));
        _engine.SetValue("loadCounter", new Func<JsValue, JsValue>(name =>
            name is not null && name.IsString() && Extras()?.Counters.Contains(name.AsString()) == true ? Reference("$counter", name.AsString()) : JsValue.Null));
        _engine.SetValue("getTimeSeries", new Func<JsValue>(() => JsValue.FromObject(_engine, Extras()?.TimeSeries.ToArray() ?? [])));
        _engine.SetValue("hasTimeSeries", new Func<JsValue, bool>(name => name is not null && name.IsString() && Extras()?.TimeSeries.Contains(name.AsString()) == true));
        _engine.SetValue("loadTimeSeries", new Func<JsValue, JsValue, JsValue, JsValue>((name, from, to) =>
        {
            if (name is null || !name.IsString() || Extras()?.TimeSeries.Contains(name.AsString()) != true)
                return JsValue.Null;
            var r = Reference("$timeseries", name.AsString());
            r.Set("from", from ?? JsValue.Undefined);
            r.Set("to", to ?? JsValue.Undefined);
            return r;
        }));
        _engine.SetValue("varchar", new Func<JsValue, JsValue, JsValue>((v, size) => Typed("Varchar", v, size)));
        _engine.SetValue("nvarchar", new Func<JsValue, JsValue, JsValue>((v, size) => Typed("Varchar", v, size)));
        _engine.SetValue("output", new Action<JsValue>(Output));
        _engine.Execute("var console = { log: output };");
        _engine.Execute(Wrap(transformation.Script));
        _function = _engine.GetValue(Function);
        // The script's top-level functions (deletion behaviours) live inside the wrapper; declared again globally so they can be called alone.
        string wrapped = Wrap(transformation.Script);
        var wrapper = (Acornima.Ast.FunctionDeclaration)new Acornima.Parser().ParseScript(wrapped).Body[0];
        foreach (var statement in wrapper.Body.Body)
            if (statement is Acornima.Ast.FunctionDeclaration { Id: { } name } f)
            {
                _engine.Execute(wrapped[f.Range.Start..f.Range.End]);
                Functions.Add(name.Name);
            }
    }

    /// <summary>Starts a batch's runs: its time limit starts now.</summary>
    public void BeginBatch() => _engine.Constraints.Reset();

    private void ResetRun()
    {
        _statements?.Reset();
        _memory?.Reset();
    }

    /// <summary>The names of the script's top-level functions.</summary>
    private HashSet<string> Functions { get; } = new(StringComparer.Ordinal);

    private Context Current => _context ?? throw new InvalidOperationException("The script reads its document only while it runs.");

    private static bool IsIdentifier(string s) => s.Length > 0 && (char.IsLetter(s[0]) || s[0] is '_' or '$') && s.All(c => char.IsLetterOrDigit(c) || c is '_' or '$');

    private DocumentExtras? Extras() => Current.Extras;

    private string AttachmentsJson()
    {
        var buffer = new ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartArray();
            foreach (var a in Extras()?.Attachments.Values ?? Enumerable.Empty<AttachmentInfo>())
                a.Write(w);
            w.WriteEndArray();
        }
        return Encoding.UTF8.GetString(buffer.WrittenSpan);
    }

    private JsObject Reference(string kind, string name)
    {
        var r = new JsObject(_engine);
        r.Set(kind, name);
        return r;
    }

    private JsObject Typed(string type, JsValue value, JsValue size)
    {
        var o = new JsObject(_engine);
        o.Set("Type", type);
        o.Set("Value", value ?? JsValue.Null);
        o.Set("Size", size is null || size.IsUndefined() ? 50 : size);
        return o;
    }

    private void Output(JsValue v) => DebugOutput.Add(v.IsString() ? v.AsString() : _serializer.Serialize(v).AsString());

    private JsValue LoadTo(string target, JsValue obj)
    {
        if (obj is not ObjectInstance o || obj.IsArray())
            throw new ArgumentException($"loadTo{target}(obj): obj must be an object.");
        EtlLoad load = _kind == EtlKind.Raven ? RavenLoad(target, o) : SqlLoad(target, o);
        _loads.Add(load);
        if (_kind == EtlKind.Sql)
            return JsValue.Undefined;
        // RavenDB ETL: the loaded document takes the document's attachments, counters and time series it is given.
        var handle = new JsObject(_engine);
        var raven = (EtlLoad.RavenDocument)load;
        handle.Set("addAttachment", JsValue.FromObject(_engine, new Action<JsValue, JsValue>((a, b) =>
        {
            var (name, reference) = b is null || b.IsUndefined() ? ((string?)null, a) : (a is not null && a.IsString() ? a.AsString() : null, b);
            if (reference is ObjectInstance r && r.Get("$attachment") is { } source && source.IsString())
                raven.Attachments.Add((name ?? source.AsString(), source.AsString()));
        })));
        handle.Set("addCounter", JsValue.FromObject(_engine, new Action<JsValue>(reference =>
        {
            if (reference is ObjectInstance r && r.Get("$counter") is { } name && name.IsString())
                raven.Counters.Add(name.AsString());
        })));
        handle.Set("addTimeSeries", JsValue.FromObject(_engine, new Action<JsValue>(reference =>
        {
            if (reference is ObjectInstance r && r.Get("$timeseries") is { } name && name.IsString())
                raven.TimeSeries.Add((name.AsString(), Milliseconds(r.Get("from"), long.MinValue), Milliseconds(r.Get("to"), long.MaxValue)));
        })));
        return handle;
    }

    /// <summary>A time-series bound (a Date or an ISO date) as the store's milliseconds; <paramref name="none"/> when there is none.</summary>
    private static long Milliseconds(JsValue v, long none) =>
        v is Jint.Native.JsDate d ? TimeSeries.TimeSeriesPoint.ToMilliseconds(d.ToDateTime())
        : v is not null && v.IsString() && DateTime.TryParse(v.AsString(), CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var t) ? TimeSeries.TimeSeriesPoint.ToMilliseconds(t)
        : none;

    private EtlLoad.RavenDocument RavenLoad(string collection, ObjectInstance o)
    {
        // The destination sets its own metadata; what is loaded is the object's fields and its collection.
        var copy = (ObjectInstance)_parser.Parse(_serializer.Serialize(o).AsString());
        copy.Delete("@metadata");
        var meta = new JsObject(_engine);
        meta.Set("@collection", collection);
        copy.Set("@metadata", meta);
        return new EtlLoad.RavenDocument(collection, Encoding.UTF8.GetBytes(_serializer.Serialize(copy).AsString()));
    }

    private EtlLoad.SqlRow SqlLoad(string table, ObjectInstance o)
    {
        _names.Clear();
        _values.Clear();
        // The keys, then each property: GetOwnProperties would allocate an enumerator and a key per property, per row.
        foreach (var key in o.GetOwnPropertyKeys(Jint.Runtime.Types.String))
        {
            var descriptor = o.GetOwnProperty(key);
            if (!descriptor.Enumerable || descriptor.Value is not { } v || v.IsUndefined())
                continue;
            _names.Add(key.AsString());
            _values.Add(ColumnValue(v));
        }
        return new EtlLoad.SqlRow(table, ColumnSet(), [.. _values]);
    }

    /// <summary>The shared array of the names in <see cref="_names"/> (a script's rows have few distinct column sets).</summary>
    private string[] ColumnSet()
    {
        foreach (var set in _columnSets)
            if (set.AsSpan().SequenceEqual(System.Runtime.InteropServices.CollectionsMarshal.AsSpan(_names)))
                return set;
        string[] added = [.. _names];
        if (_columnSets.Count < MaxColumnSets)
            _columnSets.Add(added);
        return added;
    }

    /// <summary>A column's value: text, a number, a boolean, null, an attachment's content, a typed value, or JSON text for an object or array.</summary>
    private object? ColumnValue(JsValue v)
    {
        if (v.IsNull())
            return null;
        if (v.IsString())
            return v.AsString();
        if (v.IsNumber())
            return v.AsNumber();
        if (v.IsBoolean())
            return v.AsBoolean();
        if (v is Jint.Native.JsDate d)
            return d.ToDateTime();
        if (v is ObjectInstance o && !v.IsArray())
        {
            if (o.Get("$attachment") is { } a && a.IsString())
                return new EtlLoad.AttachmentContent(Current.Document.Id, a.AsString());
            if (o.HasOwnProperty("Type") && o.HasOwnProperty("Value") && o.Get("Type").IsString())
            {
                var value = o.Get("Value");
                return new EtlLoad.TypedValue(o.Get("Type").AsString(), value.IsArray() ? ((Jint.Native.JsArray)value).Select(ColumnValue).ToArray() : ColumnValue(value));
            }
        }
        return new EtlLoad.JsonText(_serializer.Serialize(v).AsString());
    }

    /// <summary>
    /// Runs the script on <paramref name="doc"/> (read in <paramref name="tx"/>); what it loaded. Throws
    /// <see cref="EtlScriptException"/> naming the document and the script's line when the script fails.
    /// </summary>
    public List<EtlLoad> Transform(StoredDocument doc, Transaction tx, DocumentsStorage documents)
    {
        _loads.Clear();
        DebugOutput.Clear();
        _context = new Context(tx, documents, doc);
        ResetRun();
        try
        {
            var self = JavaScriptIndex.Document(_engine, doc.Json, doc.Id);
            _engine.Invoke(_function, self, []);
            return [.. _loads];
        }
        catch (Exception e) when (e is Jint.Runtime.JavaScriptException or Jint.Runtime.StatementsCountOverflowException or Jint.Runtime.RecursionDepthOverflowException
            or TimeoutException or Jint.Runtime.MemoryLimitExceededException or ArgumentException or InvalidOperationException)
        {
            throw Failure(doc.Id, e);
        }
        finally
        {
            _context = null;
            _engine.Advanced.ResetCallStack();
        }
    }

    /// <summary>
    /// Whether a change of document <paramref name="docId"/> (<paramref name="deleted"/>: a delete) removes what was
    /// loaded for it before: the script's <c>deleteDocumentsOf&lt;Collection&gt;Behavior</c> or
    /// <c>deleteDocumentsBehavior</c> decides; without either, it does.
    /// </summary>
    public bool Deletes(string docId, string collection, bool deleted, Transaction tx, DocumentsStorage documents)
    {
        string specific = "deleteDocumentsOf" + collection + "Behavior";
        string? function = Functions.Contains(specific) ? specific
            : Functions.FirstOrDefault(f => f.Equals(specific, StringComparison.OrdinalIgnoreCase)) ?? (Functions.Contains("deleteDocumentsBehavior") ? "deleteDocumentsBehavior" : null);
        if (function == null)
            return true;
        _context = new Context(tx, documents, new StoredDocument(docId, collection, 0, "", DateTime.MinValue, "{}"u8.ToArray()));
        ResetRun();
        try
        {
            JsValue[] args = function == "deleteDocumentsBehavior" ? [docId, collection, deleted] : [docId, deleted];
            var result = _engine.Invoke(function, args);
            return result.IsBoolean() ? result.AsBoolean() : !result.IsUndefined() && !result.IsNull() && Jint.Runtime.TypeConverter.ToBoolean(result);
        }
        catch (Exception e) when (e is Jint.Runtime.JavaScriptException or Jint.Runtime.StatementsCountOverflowException or Jint.Runtime.RecursionDepthOverflowException
            or TimeoutException or Jint.Runtime.MemoryLimitExceededException or ArgumentException or InvalidOperationException)
        {
            throw Failure(docId, e);
        }
        finally
        {
            _context = null;
            _engine.Advanced.ResetCallStack();
        }
    }

    private EtlScriptException Failure(string docId, Exception e)
    {
        int? line = e is Jint.Runtime.JavaScriptException js && js.Location.Start.Line > 1 ? js.Location.Start.Line - 1 : null; // the wrapper's first line
        string where = line is { } l ? $" at line {l.ToString(CultureInfo.InvariantCulture)}" : "";
        return new EtlScriptException($"The script of transformation '{_transformation}' failed on document '{docId}'{where}: {e.Message}", docId, line, e);
    }
}

/// <summary>A transformation's script failed on a document: the task stops until the script is changed or the task reset.</summary>
public sealed class EtlScriptException(string message, string documentId, int? line, Exception inner) : Exception(message, inner)
{
    public string DocumentId { get; } = documentId;

    public int? Line { get; } = line;
}
