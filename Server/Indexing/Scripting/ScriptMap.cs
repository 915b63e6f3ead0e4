using System.Collections;
using System.Collections.Concurrent;
using System.Globalization;
using System.Reflection;
using System.Text.Json;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>One map of a static index (C# or JavaScript): the collection it reads and the fields its entries have.</summary>
internal abstract class ScriptMap
{
    /// <summary>The collection whose documents it maps.</summary>
    public abstract string Collection { get; }

    /// <summary>The fields of its entries, in order.</summary>
    public abstract IReadOnlyList<string> Fields { get; }

    /// <summary>Fields whose values are spatial shapes (<c>CreateSpatialField</c>).</summary>
    public abstract IReadOnlySet<string> SpatialFields { get; }

    /// <summary>
    /// Maps one document: adds the values of every entry it outputs to <paramref name="values"/> (one list per
    /// field of <see cref="Fields"/>; CLR values as <see cref="EntryValues.Write"/> takes them). Throws when the
    /// index code fails for this document.
    /// </summary>
    public abstract void Map(JsonElement document, string id, List<object?>[] values);
}

/// <summary>A C# map compiled by <see cref="CSharpIndexCompiler"/>: entries are anonymous objects.</summary>
internal sealed class CSharpMap(CompiledMap compiled) : ScriptMap
{
    private static readonly ConcurrentDictionary<Type, PropertyInfo[]> Properties = new();

    public static IReadOnlyList<ScriptMap> Compile(IReadOnlyList<string> maps) => CSharpIndexCompiler.Compile(maps).Select(m => (ScriptMap)new CSharpMap(m)).ToList();

    public override string Collection => compiled.Collection;

    public override IReadOnlyList<string> Fields => compiled.Fields;

    public override IReadOnlySet<string> SpatialFields => compiled.SpatialFields;

    public override void Map(JsonElement document, string id, List<object?>[] values)
    {
        foreach (var entry in compiled.Run([new DynamicJsonObject(document, id)]))
        {
            if (entry == null)
                continue;
            var props = Properties.GetOrAdd(entry.GetType(), t => compiled.Fields.Select(f => t.GetProperty(f)!).ToArray());
            for (int i = 0; i < props.Length; i++)
                values[i].Add(props[i]?.GetValue(entry));
        }
    }
}

/// <summary>How index code's values become entry JSON (RavenDB's conversions).</summary>
internal static class EntryValues
{
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
