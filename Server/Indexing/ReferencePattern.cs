namespace RavenLite.Server.Indexing;

/// <summary>
/// RavenDB's <c>PatternForOutputReduceToCollectionReferences</c>: the id of the reference document an artificial
/// (reduce output) document is listed in, made from the output's fields — <c>reports/daily/{OrderedAt:yyyy-MM-dd}</c>
/// puts every output of one day in the reference document <c>reports/daily/2026-11-25</c>. A <c>{Field}</c> is
/// replaced by the field's value; <c>{Field:format}</c> formats a date (ISO 8601 text) or number with a .NET format.
/// </summary>
public sealed class ReferencePattern
{
    private readonly List<(string Text, bool IsField, string? Format)> _parts;

    private ReferencePattern(List<(string, bool, string?)> parts) => _parts = parts;

    /// <summary>
    /// Parses <paramref name="pattern"/>; every field it names must be one of <paramref name="fields"/> (the
    /// reduce's fields). 400 IndexCompilationException naming the problem otherwise.
    /// </summary>
    public static ReferencePattern Parse(string pattern, IReadOnlyList<string> fields)
    {
        static Exception Bad(string pattern, string why) =>
            new IndexCompilationException($"PatternForOutputReduceToCollectionReferences '{pattern}': {why}", "PatternForOutputReduceToCollectionReferences", pattern);
        var parts = new List<(string, bool, string?)>();
        int i = 0;
        while (i < pattern.Length)
        {
            int open = pattern.IndexOf('{', i);
            if (open < 0)
            {
                if (pattern.IndexOf('}', i) >= 0)
                    throw Bad(pattern, "a '}' without its '{'.");
                parts.Add((pattern[i..], false, null));
                break;
            }
            if (pattern.IndexOf('}', i, open - i) >= 0)
                throw Bad(pattern, "a '}' without its '{'.");
            if (open > i)
                parts.Add((pattern[i..open], false, null));
            int close = pattern.IndexOf('}', open);
            if (close < 0)
                throw Bad(pattern, "a '{' without its '}'.");
            string inside = pattern[(open + 1)..close];
            int colon = inside.IndexOf(':', StringComparison.Ordinal);
            string field = (colon < 0 ? inside : inside[..colon]).Trim();
            if (!fields.Contains(field, StringComparer.Ordinal))
                throw Bad(pattern, $"'{field}' is not a field of the reduce's results; they are: {string.Join(", ", fields)}.");
            parts.Add((field, true, colon < 0 ? null : inside[(colon + 1)..]));
            i = close + 1;
        }
        if (!parts.Any(p => p.Item2))
            throw Bad(pattern, "it names no field ({Field}), so every output would share one reference document.");
        return new ReferencePattern(parts);
    }

    /// <summary>The reference document id of the output <paramref name="output"/>; null when a field it names has no value there.</summary>
    public string? IdOf(JsonElement output)
    {
        var sb = new StringBuilder();
        foreach (var (text, isField, format) in _parts)
        {
            if (!isField)
            {
                sb.Append(text);
                continue;
            }
            if (output.ValueKind != JsonValueKind.Object || !output.TryGetProperty(text, out var v))
                return null;
            switch (v.ValueKind)
            {
                case JsonValueKind.String when format != null && v.TryGetDateTimeOffset(out var date):
                    sb.Append(date.ToString(format, CultureInfo.InvariantCulture));
                    break;
                case JsonValueKind.String:
                    sb.Append(v.GetString());
                    break;
                case JsonValueKind.Number when format != null:
                    sb.Append(v.GetDouble().ToString(format, CultureInfo.InvariantCulture));
                    break;
                case JsonValueKind.Number or JsonValueKind.True or JsonValueKind.False:
                    sb.Append(v.GetRawText());
                    break;
                default:
                    return null;
            }
        }
        return sb.ToString();
    }
}
