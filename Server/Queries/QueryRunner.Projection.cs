using RavenLite.Server.Documents;
using RavenLite.Server.Formatting;

namespace RavenLite.Server.Queries;

/// <summary>What an answered row becomes: the document, its projected fields, counters, time series, or a JavaScript projection's output.</summary>
public sealed partial class QueryRunner
{
    /// <summary>The JavaScript projection the query's <c>select { }</c> or <c>load</c> needs, reading from <paramref name="dbTx"/>; else null.</summary>
    private JavaScriptProjection? NewProjection(Storage.Transactions.Transaction dbTx) =>
        _query.SelectScript != null || _query.Loads.Count > 0 ? new JavaScriptProjection(_query, _parameters, id => _db.Documents.Get(dbTx, id), key => CompareExchange.CompareExchangeStore.GetObject(dbTx, key),
            (id, name, raw) => CounterJson(dbTx, id, name, raw)) : null;

    /// <summary>What the answer holds for a kept row: the document, or its projection, with <c>@index-score</c> when searched.</summary>
    private ResultJson Output(Row row, JavaScriptProjection? projection, Storage.Transactions.Transaction dbTx)
    {
        byte[] output = projection != null ? projection.Project(row.Document!, row.DocumentJson)
            : _query.TimeSeries.Count > 0 ? ProjectTimeSeries(row.Document!, dbTx)
            : _query.Select.Count > 0 ? Project(row) : row.Document!.Json;
        return new ResultJson(output, _searchHits is { Count: > 0 } || HasBoost ? Score(row) : null, SpatialMetadata(row));
    }

    /// <summary>
    /// A distance-ordered answer's <c>@spatial</c> metadata, as RavenDB writes it: <c>{"Distance", "Latitude", "Longitude"}</c>
    /// of the row's shape nearest to the point of the first <c>order by spatial.distance()</c> (its units, unrounded); null otherwise.
    /// </summary>
    private byte[]? SpatialMetadata(Row row)
    {
        if (_query.OrderBy.FirstOrDefault(o => o.Type == RqlOrderType.Distance) is not { } key)
            return null;
        var from = ShapeOf(key.DistanceFrom!, key.DistanceOf!).Center;
        var shapes = ShapesOf(key.DistanceOf!, row);
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(96);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            if (shapes.Count == 0)
            {
                w.WriteNull("Distance");
                w.WriteNull("Latitude");
                w.WriteNull("Longitude");
            }
            else
            {
                var nearest = shapes.MinBy(x => DistanceBetween(key.DistanceOf!, from, x.Center))!.Center;
                w.WriteNumber("Distance", DistanceBetween(key.DistanceOf!, from, nearest));
                var (lat, lng) = Answered(key.DistanceOf!, nearest);
                w.WriteNumber("Latitude", lat);
                w.WriteNumber("Longitude", lng);
            }
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>The projection without its @metadata, for distinct.</summary>
    private static byte[] ProjectionKey(byte[] output)
    {
        using var d = JsonDocument.Parse(output);
        var b = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(b))
        {
            w.WriteStartObject();
            foreach (var p in d.RootElement.EnumerateObject())
                if (p.Name != "@metadata")
                    p.WriteTo(w);
            w.WriteEndObject();
        }
        return b.WrittenSpan.ToArray();
    }

    private string _projectionBehavior = "Default";

    /// <summary>A counter's total (or, raw, <c>{"A:{version}-{db}": total}</c>), null when the document has no such counter.</summary>
    private void WriteCounter(Utf8JsonWriter w, StoredDocument doc, string name, bool raw)
    {
        using var tx = _db.Environment.ReadTransaction();
        CounterJson(tx, doc.Id, name, raw).WriteTo(w);
    }

    private JsonElement CounterJson(RavenLite.Storage.Transactions.Transaction tx, string id, string name, bool raw)
    {
        if (Counters.CountersStore.Get(tx, _db.Documents.KeyOf(id), name) is not { } c)
            return JsonSerializer.SerializeToElement<object?>(null);
        return raw
            ? JsonSerializer.SerializeToElement(new Dictionary<string, long> { [_db.Documents.LocalChangeVector(c.Version)] = c.Value })
            : JsonSerializer.SerializeToElement(c.Value);
    }

    private List<TimeSeries.TimeSeriesQuery>? _timeSeriesQueries;

    /// <summary>The answer of <c>select timeseries(..) as a, ..</c> for one document: <c>{"a": {"Count","Results"}, .., "@metadata"}</c>.</summary>
    private byte[] ProjectTimeSeries(StoredDocument doc, RavenLite.Storage.Transactions.Transaction tx)
    {
        _timeSeriesQueries ??= _query.TimeSeries.Select(t => TimeSeries.TimeSeriesQuery.Parse(t.Text, _parameters)).ToList();
        var key = _db.Documents.KeyOf(doc.Id);
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        void Metadata(Utf8JsonWriter w)
        {
            w.WriteStartObject("@metadata");
            w.WriteBoolean("@projection", true);
            w.WriteString("@id", doc.Id);
            w.WriteString("@change-vector", doc.ChangeVector);
            w.WriteEndObject();
        }
        using (var w = new Utf8JsonWriter(buffer))
        {
            if (_query.TimeSeries is [{ Unnamed: true }])
            {
                // select ts(x) of a declared time series, no alias: the result itself.
                var q = _timeSeriesQueries[0];
                q.Write(w, TimeSeries.TimeSeriesStore.Read(tx, key, q.Name, q.From, q.To), Metadata);
            }
            else
            {
                w.WriteStartObject();
                for (int i = 0; i < _timeSeriesQueries.Count; i++)
                {
                    var q = _timeSeriesQueries[i];
                    w.WritePropertyName(_query.TimeSeries[i].Alias);
                    q.Write(w, TimeSeries.TimeSeriesStore.Read(tx, key, q.Name, q.From, q.To));
                }
                Metadata(w);
                w.WriteEndObject();
            }
        }
        return buffer.WrittenSpan.ToArray();
    }

    private byte[] Project(Row row)
    {
        var doc = row.Document!;
        var root = row.DocumentJson;
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            foreach (var f in _query.Select)
            {
                w.WritePropertyName(f.Alias);
                if (f.Counter != null)
                {
                    WriteCounter(w, doc, ResolveString(f.Counter), f.CounterRaw);
                    continue;
                }
                if (f.Path.IsId)
                {
                    w.WriteStringValue(doc.Id);
                    continue;
                }
                var values = new List<JsonElement>();
                bool throughArray = false;
                // Where the value comes from (ProjectionBehavior): the index's entry (an index field; by default when
                // the field is stored) or the document; by default the document, else the values the map computed.
                var indexField = row.HasEntry ? _compiled?.Field(f.Path.ToString()) : null;
                bool fromIndex = _projectionBehavior is "FromIndex" or "FromIndexOrThrow" || (_projectionBehavior == "Default" && indexField is { Stored: true });
                if (_projectionBehavior == "FromIndexOrThrow" && indexField == null)
                    throw new InvalidQueryException($"ProjectionBehavior FromIndexOrThrow: '{f.Path}' is not a field of the index.");
                if (fromIndex)
                {
                    if (indexField != null)
                    {
                        values = row.Values(f.Path);
                        throughArray = values.Count > 1;
                    }
                }
                else
                {
                    JsonPaths.WalkToValues(root, f.Path.Parts, 0, values);
                    throughArray = JsonPaths.PassesArray(root, f.Path.Parts);
                    if (values.Count == 0 && _projectionBehavior == "FromDocumentOrThrow" && !JsonPaths.Exists(root, f.Path.Parts))
                        throw new InvalidQueryException($"ProjectionBehavior FromDocumentOrThrow: document '{doc.Id}' has no '{f.Path}'.");
                    if (values.Count == 0 && row.HasEntry && _projectionBehavior == "Default")
                    {
                        // A field the map computes (not in the document): its indexed values.
                        values = row.Values(f.Path);
                        throughArray = values.Count > 1;
                    }
                }
                if (values.Count == 0)
                    w.WriteNullValue();
                else if (values.Count == 1 && !throughArray)
                    values[0].WriteTo(w);
                else
                {
                    w.WriteStartArray();
                    foreach (var v in values)
                        v.WriteTo(w);
                    w.WriteEndArray();
                }
            }
            w.WriteStartObject("@metadata");
            w.WriteBoolean("@projection", true);
            w.WriteString("@id", doc.Id);
            w.WriteString("@change-vector", doc.ChangeVector);
            if (doc.Collection != Documents.Collections.Empty)
                w.WriteString("@collection", doc.Collection);
            w.WriteString("@last-modified", JsonDates.FormatDate(doc.LastModified));
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }
}
