using Jint;
using Jint.Native;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>
/// A document's UTF-8 JSON as JavaScript values, read straight from the bytes (no UTF-16 copy of the text first):
/// objects keep their properties in document order (a repeated name keeps its last value), numbers are doubles.
/// Property names are shared across documents, from a small per-thread cache.
/// </summary>
internal static class JsonToJs
{
    private const int MaxDepth = 512;
    private const int MaxCachedNames = 4096;
    private const int MaxCachedNameLength = 64;

    [ThreadStatic]
    private static Dictionary<string, string>? t_names;

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
                return JsString.Create(reader.GetString()!);
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

    private static string Name(ref Utf8JsonReader reader)
    {
        if (reader.ValueIsEscaped || reader.HasValueSequence || reader.ValueSpan.Length > MaxCachedNameLength)
            return reader.GetString()!;
        Span<char> chars = stackalloc char[MaxCachedNameLength];
        int n = Encoding.UTF8.GetChars(reader.ValueSpan, chars);
        var names = t_names ??= new Dictionary<string, string>(StringComparer.Ordinal);
        var lookup = names.GetAlternateLookup<ReadOnlySpan<char>>();
        if (lookup.TryGetValue(chars[..n], out string? name))
            return name;
        name = new string(chars[..n]);
        if (names.Count < MaxCachedNames)
            names.Add(name, name);
        return name;
    }
}
