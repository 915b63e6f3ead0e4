namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// The replication checker: reads two databases whole over HTTP and lists every difference item by item — ids,
/// change vectors, last-modified times and content (the whole document, metadata included).
/// </summary>
public static class DatabaseComparer
{
    /// <summary>Every document of <paramref name="database"/> by id (lower-cased): its full JSON.</summary>
    public static async Task<Dictionary<string, JsonElement>> ReadAllAsync(HttpClient http, string database)
    {
        var r = await http.GetAsync($"/databases/{database}/streams/docs");
        var json = await TestServer.ReadJson(r);
        Assert.True(r.IsSuccessStatusCode, json.ToString());
        return json.GetProperty("Results").EnumerateArray().ToDictionary(d => d.GetProperty("@metadata").GetProperty("@id").GetString()!.ToLowerInvariant(), d => d.Clone());
    }

    /// <summary>The differences between the two databases (empty when they hold the same items).</summary>
    public static async Task<List<string>> DifferencesAsync(HttpClient left, string leftDatabase, HttpClient right, string rightDatabase)
    {
        var a = await ReadAllAsync(left, leftDatabase);
        var b = await ReadAllAsync(right, rightDatabase);
        var differences = new List<string>();
        foreach (var (id, doc) in a)
        {
            if (!b.TryGetValue(id, out var other))
                differences.Add($"{id}: only on the left");
            else if (doc.ToString() != other.ToString())
                differences.Add($"{id}: left {doc} / right {other}");
        }
        foreach (string id in b.Keys.Where(k => !a.ContainsKey(k)))
            differences.Add($"{id}: only on the right");
        return differences;
    }
}
