namespace RavenLite.Server.Queries;

/// <summary>
/// Value rules shared by queries and indexes, so an index can never disagree with a scan:
/// what a path reaches, how text orders and compares, and how full-text is analyzed.
/// </summary>
public static class JsonPaths
{
    /// <summary>The values <paramref name="parts"/> reaches from <paramref name="node"/>: arrays on the way (and at the end) are flattened; missing → none.</summary>
    public static void Walk(JsonElement node, IReadOnlyList<string> parts, int index, List<JsonElement> result)
    {
        if (node.ValueKind == JsonValueKind.Array)
        {
            foreach (var e in node.EnumerateArray())
                Walk(e, parts, index, result);
            return;
        }
        if (index == parts.Count)
        {
            result.Add(node);
            return;
        }
        if (node.ValueKind == JsonValueKind.Object && node.TryGetProperty(parts[index], out var child))
            Walk(child, parts, index + 1, result);
    }

    /// <summary>
    /// The values <paramref name="parts"/> reaches for a projection: arrays on the way are walked item by item, but a
    /// value at the end is kept whole (an array of arrays stays one, as RavenDB projects it).
    /// </summary>
    public static void WalkToValues(JsonElement node, IReadOnlyList<string> parts, int index, List<JsonElement> result)
    {
        if (index == parts.Count)
        {
            result.Add(node);
            return;
        }
        if (node.ValueKind == JsonValueKind.Array)
        {
            foreach (var e in node.EnumerateArray())
                WalkToValues(e, parts, index, result);
            return;
        }
        if (node.ValueKind == JsonValueKind.Object && node.TryGetProperty(parts[index], out var child))
            WalkToValues(child, parts, index + 1, result);
    }

    /// <summary>True when the document has the path (a null value counts; through arrays, in any item).</summary>
    public static bool Exists(JsonElement node, IReadOnlyList<string> parts, int index = 0)
    {
        if (node.ValueKind == JsonValueKind.Array)
        {
            foreach (var e in node.EnumerateArray())
                if (Exists(e, parts, index))
                    return true;
            return false;
        }
        if (index == parts.Count)
            return true;
        return node.ValueKind == JsonValueKind.Object && node.TryGetProperty(parts[index], out var child) && Exists(child, parts, index + 1);
    }

    /// <summary>True when the path passes through an array (a projection of it is then an array).</summary>
    public static bool PassesArray(JsonElement node, IReadOnlyList<string> parts)
    {
        for (int i = 0; i < parts.Count; i++)
        {
            if (node.ValueKind == JsonValueKind.Array)
                return true;
            if (node.ValueKind != JsonValueKind.Object || !node.TryGetProperty(parts[i], out node))
                return false;
        }
        return false;
    }

    /// <summary>
    /// A property of an object by name, ignoring case (options and setup documents arrive PascalCased from
    /// the .NET client and camelCased from the Node client); null when absent or not an object.
    /// </summary>
    public static JsonElement? PropertyIgnoringCase(JsonElement o, string name)
    {
        if (o.ValueKind != JsonValueKind.Object)
            return null;
        foreach (var p in o.EnumerateObject())
            if (p.Name.Equals(name, StringComparison.OrdinalIgnoreCase))
                return p.Value;
        return null;
    }

    /// <summary>
    /// Case-insensitive text order: the invariant lower-case forms compared by Unicode code point
    /// (which is also the byte order of their UTF-8, the order of index terms).
    /// </summary>
    public static int CompareText(string a, string b) => CompareCodePoints(a.ToLowerInvariant(), b.ToLowerInvariant());

    /// <summary>Case-sensitive text order by Unicode code point.</summary>
    public static int CompareCodePoints(string a, string b)
    {
        int n = Math.Min(a.Length, b.Length);
        for (int i = 0; i < n; i++)
        {
            char x = a[i], y = b[i];
            if (x == y)
                continue;
            // UTF-16 code units order surrogates (supplementary code points) below U+E000..U+FFFF; fix that up.
            if (x >= 0xD800 && y >= 0xD800)
            {
                x = (char)(x >= 0xE000 ? x - 0x800 : x + 0x2000);
                y = (char)(y >= 0xE000 ? y - 0x800 : y + 0x2000);
            }
            return x < y ? -1 : 1;
        }
        return Math.Sign(a.Length - b.Length);
    }

    /// <summary>Full-text analysis: lower-cased runs of letters and digits.</summary>
    public static IEnumerable<string> Analyze(string text)
    {
        int start = -1;
        for (int i = 0; i <= text.Length; i++)
        {
            bool word = i < text.Length && char.IsLetterOrDigit(text[i]);
            if (word && start < 0)
                start = i;
            else if (!word && start >= 0)
            {
                yield return text[start..i].ToLowerInvariant();
                start = -1;
            }
        }
    }
}
