using Jint;
using Jint.Native;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>
/// A document's UTF-8 JSON as JavaScript values, read straight from the bytes (no UTF-16 copy of the text first):
/// objects keep their properties in document order (a repeated name keeps its last value), numbers are doubles.
/// Property names and short string values are shared across documents, from small per-thread caches.
/// </summary>
internal static class JsonToJs
{
    private const int MaxDepth = 512;
    private const int MaxCachedNameLength = 64;
    private const int MaxCachedValueLength = 32;

    [ThreadStatic]
    private static Utf8Intern<string>? t_names;

    [ThreadStatic]
    private static Utf8Intern<JsString>? t_values; // short values repeat across documents (statuses, cities, ids of a few)

    public static JsValue Parse(Engine engine, ReadOnlySpan<byte> utf8)
    {
        var reader = new Utf8JsonReader(utf8, new JsonReaderOptions { MaxDepth = MaxDepth });
        if (!reader.Read())
            throw new JsonException("The document is empty.");
        return Value(engine, ref reader);
    }

    private static JsValue Value(Engine engine, ref Utf8JsonReader reader)
    {
        switch (reader.TokenType)
        {
            case JsonTokenType.StartObject:
                var o = new JsObject(engine);
                while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
                {
                    string name = Name(ref reader);
                    reader.Read();
                    o.FastSetDataProperty(name, Value(engine, ref reader));
                }
                return o;
            case JsonTokenType.StartArray:
                var items = new List<JsValue>();
                while (reader.Read() && reader.TokenType != JsonTokenType.EndArray)
                    items.Add(Value(engine, ref reader));
                return new JsArray(engine, [.. items]);
            case JsonTokenType.String:
                return StringValue(ref reader);
            case JsonTokenType.Number:
                return JsNumber.Create(reader.GetDouble());
            case JsonTokenType.True:
                return JsBoolean.True;
            case JsonTokenType.False:
                return JsBoolean.False;
            default:
                return JsValue.Null;
        }
    }

    /// <summary>A string value; a short one is shared across documents (JavaScript strings are immutable).</summary>
    private static JsString StringValue(ref Utf8JsonReader reader) =>
        reader.ValueIsEscaped || reader.HasValueSequence || reader.ValueSpan.Length > MaxCachedValueLength
            ? JsString.Create(reader.GetString()!)
            : (t_values ??= new Utf8Intern<JsString>(JsString.Create)).Get(reader.ValueSpan);

    private static string Name(ref Utf8JsonReader reader) =>
        reader.ValueIsEscaped || reader.HasValueSequence || reader.ValueSpan.Length > MaxCachedNameLength
            ? reader.GetString()!
            : (t_names ??= new Utf8Intern<string>(static s => s)).Get(reader.ValueSpan);
}
