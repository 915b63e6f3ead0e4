using RavenLite.Server.Documents;

namespace RavenLite.Server.Etl;

/// <summary>
/// What a RavenDB ETL transformation with an empty script loads: the document as it is, to its own collection, with
/// all of its attachments, counters and time series. Its metadata goes without what the destination keeps itself
/// (id, change vector, dates, flags, the lists of extensions).
/// </summary>
internal static class EtlWholeDocument
{
    private static readonly HashSet<string> Reserved = new(StringComparer.OrdinalIgnoreCase)
    {
        "@id", "@change-vector", "@last-modified", "@flags", "@attachments", "@counters", "@timeseries", "@etag", "@index-score", "@nested-object-types",
    };

    public static EtlLoad.RavenDocument Of(StoredDocument doc)
    {
        var buffer = new ArrayBufferWriter<byte>(doc.Json.Length);
        using (var json = JsonDocument.Parse(doc.Json))
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            foreach (var p in json.RootElement.EnumerateObject())
            {
                if (p.Name != "@metadata")
                {
                    p.WriteTo(w);
                    continue;
                }
                w.WriteStartObject("@metadata");
                if (p.Value.ValueKind == JsonValueKind.Object)
                    foreach (var m in p.Value.EnumerateObject())
                        if (!Reserved.Contains(m.Name))
                            m.WriteTo(w);
                w.WriteEndObject();
            }
            w.WriteEndObject();
        }
        var load = new EtlLoad.RavenDocument(doc.Collection, buffer.WrittenSpan.ToArray());
        if (DocumentExtras.Read(doc.Json) is { } extras)
        {
            foreach (string name in extras.Attachments.Keys)
                load.Attachments.Add((name, name));
            load.Counters.AddRange(extras.Counters);
            foreach (string series in extras.TimeSeries)
                load.TimeSeries.Add((series, long.MinValue, long.MaxValue));
        }
        return load;
    }
}
