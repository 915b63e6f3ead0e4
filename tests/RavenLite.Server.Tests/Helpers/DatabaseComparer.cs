namespace RavenLite.Server.Tests.Helpers;

/// <summary>
/// The replication checker: reads two databases whole over HTTP and lists every difference item by item — ids,
/// change vectors, last-modified times and content (the whole document, metadata included: attachments by hash), and
/// for each document the values of its counters and the entries of its time series.
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

    /// <summary>Where two texts first differ: a little of each around that place.</summary>
    private static string Around(string left, string right)
    {
        int at = 0;
        while (at < left.Length && at < right.Length && left[at] == right[at])
            at++;
        int from = Math.Max(0, at - 60);
        return $"left ({left.Length} chars) …{left[from..Math.Min(left.Length, at + 80)]} / right ({right.Length} chars) …{right[from..Math.Min(right.Length, at + 80)]}";
    }

    /// <summary>The document's counter values and time-series entries (those its metadata names), as text.</summary>
    private static async Task<string> ExtensionsAsync(HttpClient http, string database, string id, JsonElement doc)
    {
        var text = new StringBuilder();
        var metadata = doc.GetProperty("@metadata");
        // Values only: a counter's etag and change vector are each node's own version of it.
        if (metadata.TryGetProperty("@counters", out _))
        {
            using var counters = JsonDocument.Parse(await http.GetStringAsync($"/databases/{database}/counters?docId={Uri.EscapeDataString(id)}"));
            foreach (var c in counters.RootElement.GetProperty("Counters").EnumerateArray().Where(c => c.ValueKind == JsonValueKind.Object))
                text.Append(c.GetProperty("CounterName").GetString()).Append('=').Append(c.GetProperty("TotalValue").GetInt64()).Append(' ');
        }
        if (metadata.TryGetProperty("@timeseries", out var series))
            foreach (var name in series.EnumerateArray())
                text.Append(name.GetString()).Append(':').Append(await http.GetStringAsync($"/databases/{database}/timeseries?docId={Uri.EscapeDataString(id)}&name={Uri.EscapeDataString(name.GetString()!)}"));
        return text.ToString();
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
            else if (await ExtensionsAsync(left, leftDatabase, id, doc) is var l && await ExtensionsAsync(right, rightDatabase, id, doc) is var r && l != r)
                differences.Add($"{id}: {Around(l, r)}");
        }
        foreach (string id in b.Keys.Where(k => !a.ContainsKey(k)))
            differences.Add($"{id}: only on the right");
        return differences;
    }
}
