namespace RavenLite.Server.Documents;

/// <summary>
/// Collects the ids an <c>include</c> path names inside a document: dotted property paths
/// (<c>Company</c>, <c>Address.CityId</c>); arrays on the way are walked element by element
/// (<c>Lines.Product</c> or <c>Lines[].Product</c>). String values are ids; others are ignored.
/// </summary>
public static class IncludePaths
{
    /// <summary>Adds every id <paramref name="path"/> reaches in <paramref name="document"/> to <paramref name="ids"/>.</summary>
    public static void Collect(JsonElement document, string path, ICollection<string> ids)
    {
        var parts = path.Split('.', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries);
        Walk(document, parts, 0, ids);
    }

    private static void Walk(JsonElement node, string[] parts, int index, ICollection<string> ids)
    {
        if (node.ValueKind == JsonValueKind.Array)
        {
            foreach (var e in node.EnumerateArray())
                Walk(e, parts, index, ids);
            return;
        }
        if (index == parts.Length)
        {
            if (node.ValueKind == JsonValueKind.String && node.GetString() is { Length: > 0 } id)
                ids.Add(id);
            return;
        }
        if (node.ValueKind != JsonValueKind.Object)
            return;
        string name = parts[index].EndsWith("[]", StringComparison.Ordinal) ? parts[index][..^2] : parts[index];
        if (node.TryGetProperty(name, out var child))
            Walk(child, parts, index + 1, ids);
    }
}
