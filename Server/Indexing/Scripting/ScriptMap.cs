using System.Collections;
using System.Collections.Concurrent;
using System.Reflection;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>One map of a static index (C# or JavaScript): the collection it reads and the fields its entries have.</summary>
internal abstract class ScriptMap
{
    /// <summary>The collection whose documents (or whose documents' counters or time series) it maps.</summary>
    public string Collection => Source.Collection;

    /// <summary>What it maps: a collection's documents, or their counters or time series (one, or all).</summary>
    public abstract IndexSource Source { get; }

    /// <summary>The fields of its entries, in order.</summary>
    public abstract IReadOnlyList<string> Fields { get; }

    /// <summary>Fields whose values are spatial shapes (<c>CreateSpatialField</c>).</summary>
    public abstract IReadOnlySet<string> SpatialFields { get; }

    /// <summary>
    /// Maps one document: adds the values of every entry it outputs to <paramref name="values"/> (one list per
    /// field of <see cref="Fields"/>; CLR values as <see cref="EntryValues.Write"/> takes them), and to
    /// <paramref name="runtimeFields"/> a <see cref="DynamicField"/> per value of a field known only when the map ran
    /// (a JavaScript map's properties that are not in its literals). Throws when the index code fails for this document.
    /// </summary>
    public abstract void Map(JsonElement document, string id, List<object?>[] values, List<object?> runtimeFields);

    /// <summary>Map-reduce: adds each entry the map outputs for the document to <paramref name="results"/> as a JSON object.</summary>
    public abstract void MapResults(JsonElement document, string id, List<byte[]> results);

    /// <summary>True when several threads may map documents at once (compiled C#; a JavaScript engine is one thread's).</summary>
    public virtual bool RunsOnAnyThread => false;

    /// <summary>The top-level document properties the map reads, or null when it may use a document whole.</summary>
    public virtual IReadOnlySet<string>? Reads => null;
}

/// <summary>The reduce of a map-reduce index (C# or JavaScript).</summary>
internal abstract class ScriptReduce
{
    /// <summary>The fields of its results (the index's fields).</summary>
    public abstract IReadOnlyList<string> Fields { get; }

    /// <summary>The reduce key of one map result, as canonical JSON.</summary>
    public abstract string KeyOf(JsonElement mapResult);

    /// <summary>Reduces the map results of one key; adds each result (a JSON object) to <paramref name="outputs"/>.</summary>
    public abstract void Reduce(IReadOnlyList<JsonElement> mapResults, List<byte[]> outputs);

    /// <summary>True when several threads may compute reduce keys at once (compiled C#).</summary>
    public virtual bool RunsOnAnyThread => false;
}

/// <summary>A C# reduce compiled by <see cref="CSharpIndexCompiler"/>.</summary>
internal sealed class CSharpReduce(CompiledReduce compiled) : ScriptReduce
{
    public override IReadOnlyList<string> Fields => compiled.Fields;

    public override bool RunsOnAnyThread => true;

    public override string KeyOf(JsonElement mapResult) => EntryValues.Json(compiled.Key(new DynamicJsonObject(mapResult)));

    public override void Reduce(IReadOnlyList<JsonElement> mapResults, List<byte[]> outputs)
    {
        foreach (var result in compiled.Run(mapResults.Select(r => (dynamic)new DynamicJsonObject(r)).ToList()))
            if (result != null)
                outputs.Add(EntryValues.ObjectJson(result, compiled.Fields));
    }
}

/// <summary>A C# map compiled by <see cref="CSharpIndexCompiler"/>: entries are anonymous objects.</summary>
internal sealed class CSharpMap(CompiledMap compiled) : ScriptMap
{
    public override IndexSource Source { get; } = IndexSource.Decode(compiled.Collection);

    public override bool RunsOnAnyThread => true;

    public override IReadOnlySet<string>? Reads => compiled.Reads;

    public override IReadOnlyList<string> Fields => compiled.Fields;

    public override IReadOnlySet<string> SpatialFields => compiled.SpatialFields;

    public override void Map(JsonElement document, string id, List<object?>[] values, List<object?> runtimeFields)
    {
        foreach (var mapped in compiled.Run([new DynamicJsonObject(document, id, dates: Source.Kind == IndexSourceType.TimeSeries)]))
        {
            var (entry, boost) = mapped is IBoostedEntry boosted ? (boosted.Entry, boosted.Boost) : (mapped, 1f);
            if (entry == null)
                continue;
            var props = EntryValues.PropertiesOf(entry.GetType(), compiled.Fields);
            for (int i = 0; i < props.Length; i++)
            {
                var value = props[i]?.GetValue(entry);
                values[i].Add(boost == 1 ? value : new BoostedValue(value, boost));
            }
        }
    }

    public override void MapResults(JsonElement document, string id, List<byte[]> results)
    {
        foreach (var mapped in compiled.Run([new DynamicJsonObject(document, id, dates: Source.Kind == IndexSourceType.TimeSeries)]))
            if ((mapped is IBoostedEntry boosted ? boosted.Entry : mapped) is { } entry)
                results.Add(EntryValues.ObjectJson(entry, compiled.Fields)); // boosts score search(); map results are not searched
    }
}

/// <summary>How index code's values become entry JSON (RavenDB's conversions).</summary>
internal static class EntryValues
{
    private static readonly ConcurrentDictionary<Type, PropertyInfo?[]> Properties = new();

    /// <summary>The properties <paramref name="fields"/> of an entry type (an anonymous type), by name.</summary>
    public static PropertyInfo?[] PropertiesOf(Type type, IReadOnlyList<string> fields) =>
        Properties.GetOrAdd(type, t => fields.Select(f => t.GetProperty(f)).ToArray());

    /// <summary>An entry object (an anonymous object) as a JSON object of its <paramref name="fields"/>; sequences stay arrays.</summary>
    public static byte[] ObjectJson(object entry, IReadOnlyList<string> fields)
    {
        var props = PropertiesOf(entry.GetType(), fields);
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(128);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            for (int i = 0; i < props.Length; i++)
            {
                var v = props[i]?.GetValue(entry);
                if (props[i] == null || v is DynamicNull { IsMissing: true })
                    continue;
                w.WritePropertyName(fields[i]);
                WriteNested(w, v);
            }
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>A value as JSON text (sequences as arrays): a reduce key's canonical form.</summary>
    public static string Json(object? value)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(64);
        using (var w = new Utf8JsonWriter(buffer))
            WriteNested(w, value);
        return Encoding.UTF8.GetString(buffer.WrittenSpan);
    }

    /// <summary>As <see cref="Write"/>, but a sequence is one array value and a missing value is null.</summary>
    public static void WriteNested(Utf8JsonWriter w, object? value)
    {
        switch (value)
        {
            case DynamicNull:
                w.WriteNullValue();
                break;
            case string or DynamicJsonObject or JsonElement:
                Write(w, value);
                break;
            case IEnumerable items:
                w.WriteStartArray();
                foreach (var item in items)
                    WriteNested(w, item);
                w.WriteEndArray();
                break;
            case { } when value.GetType().Name.Contains("AnonymousType", StringComparison.Ordinal):
                w.WriteStartObject();
                foreach (var p in value.GetType().GetProperties())
                {
                    w.WritePropertyName(p.Name);
                    WriteNested(w, p.GetValue(value));
                }
                w.WriteEndObject();
                break;
            default:
                Write(w, value);
                break;
        }
    }

    /// <summary>The values of a field: sequences (not text or JSON objects) expanded into their items, missing values left out.</summary>
    public static void Flatten(IEnumerable<object?> values, List<object?> into)
    {
        foreach (var v in values)
        {
            switch (v)
            {
                case DynamicNull { IsMissing: true }:
                    break;
                case null or string or DynamicJsonObject or DynamicNull:
                    into.Add(v);
                    break;
                case BoostedValue boosted:
                {
                    // Each item of a boosted sequence keeps the boost.
                    var (inner, boost) = BoostedValue.Unwrap(boosted);
                    var items = new List<object?>();
                    Flatten([inner], items);
                    foreach (var item in items)
                        into.Add(new BoostedValue(item, boost));
                    break;
                }
                case IEnumerable<object?> items:
                    Flatten(items, into);
                    break;
                case IEnumerable items:
                    Flatten(items.Cast<object?>(), into);
                    break;
                default:
                    into.Add(v);
                    break;
            }
        }
    }

    /// <summary>
    /// Writes <paramref name="value"/>: text, numbers and booleans as they are; null as null; a missing value not at
    /// all; dates as ISO 8601 text; NaN and infinities fail the document; a spatial value as its WKT; a JSON object as itself; a sequence as its items
    /// (each a value of the field); anything else as JSON.
    /// </summary>
    public static void Write(Utf8JsonWriter w, object? value)
    {
        switch (value)
        {
            case null:
                w.WriteNullValue();
                break;
            case DynamicNull n:
                if (!n.IsMissing)
                    w.WriteNullValue();
                break;
            case BoostedValue b:
                Write(w, BoostedValue.Unwrap(b).Value);
                break;
            case string s:
                w.WriteStringValue(s);
                break;
            case bool b:
                w.WriteBooleanValue(b);
                break;
            case long or int or short or byte or sbyte or ushort or uint:
                w.WriteNumberValue(Convert.ToInt64(value, CultureInfo.InvariantCulture));
                break;
            case ulong ul:
                w.WriteNumberValue(ul);
                break;
            case double d:
                WriteDouble(w, d);
                break;
            case float f:
                WriteDouble(w, f);
                break;
            case decimal m:
                w.WriteNumberValue(m);
                break;
            case char c:
                w.WriteStringValue(c.ToString());
                break;
            case DateTime dt:
                w.WriteStringValue(dt.ToString(dt.Kind == DateTimeKind.Utc ? "yyyy-MM-ddTHH:mm:ss.fffffffZ" : "yyyy-MM-ddTHH:mm:ss.fffffff", CultureInfo.InvariantCulture));
                break;
            case DateTimeOffset dto:
                w.WriteStringValue(dto.ToString("o", CultureInfo.InvariantCulture));
                break;
            case DateOnly date:
                w.WriteStringValue(date.ToString("yyyy-MM-dd", CultureInfo.InvariantCulture));
                break;
            case TimeSpan ts:
                w.WriteStringValue(ts.ToString("c", CultureInfo.InvariantCulture));
                break;
            case Guid or Enum:
                w.WriteStringValue(value.ToString());
                break;
            case SpatialValue sv:
                w.WriteStringValue(sv.Wkt);
                break;
            case DynamicJsonObject o:
                o.Element.WriteTo(w);
                break;
            case JsonElement e:
                e.WriteTo(w);
                break;
            case IEnumerable items:
                foreach (var item in items)
                    Write(w, item);
                break;
            default:
                JsonSerializer.Serialize(w, value, value.GetType());
                break;
        }
    }

    private static void WriteDouble(Utf8JsonWriter w, double d)
    {
        if (!double.IsFinite(d))
            throw new InvalidOperationException($"{d.ToString(CultureInfo.InvariantCulture)} is not a number an index can hold.");
        w.WriteNumberValue(d);
    }
}
