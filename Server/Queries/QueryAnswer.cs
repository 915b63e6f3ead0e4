using RavenLite.Server.Documents;

namespace RavenLite.Server.Queries;

/// <summary>
/// A query's answer: result JSON (whole documents or projections, each with @metadata), the match
/// count, included documents, the etag it saw, the source's name, whether the index was behind the
/// documents, and when the index last indexed.
/// </summary>
public sealed record QueryAnswer(IReadOnlyList<ResultJson> Results, long TotalResults, IReadOnlyDictionary<string, StoredDocument?> Includes, long ResultEtag, string IndexName, bool IsStale, DateTime? IndexTimestamp)
{
    /// <summary>Writes further top-level properties of the answer (Highlightings, Explanations, Timings), or null.</summary>
    public Action<Utf8JsonWriter>? WriteExtras { get; init; }

    /// <summary>
    /// What the included counters, time series and compare-exchange values are (their versions): they change without the
    /// documents' etag moving, so an answer's ETag is made with them.
    /// </summary>
    public IReadOnlyList<string?> IncludeTagParts { get; init; } = [];
}

/// <summary>
/// One result's JSON — a document or a projection — and its relevance when the query searched: <c>@index-score</c> (and a
/// distance-ordered answer's <c>@spatial</c>, given as its JSON object) is added to the result's <c>@metadata</c> as it is
/// written into the answer (not copied into a new array per result).
/// </summary>
public readonly record struct ResultJson(byte[] Json, double? Score = null, byte[]? Spatial = null)
{
    private static ReadOnlySpan<byte> Metadata => "\"@metadata\":{"u8;
    private static ReadOnlySpan<byte> ScoreName => "\"@index-score\":"u8;
    private static ReadOnlySpan<byte> SpatialName => "\"@spatial\":"u8;

    /// <summary>A result without a score.</summary>
    public static implicit operator ResultJson(byte[] json) => new(json);

    /// <summary>Bytes as written (about: a score takes up to 40).</summary>
    public int Length => Json.Length + (Score == null ? 0 : 40) + (Spatial?.Length + 12 ?? 0);

    private bool Plain => Score == null && Spatial == null;

    private int Extra => 64 + (Spatial?.Length ?? 0);

    /// <summary>Writes the result as a raw JSON value.</summary>
    public void WriteTo(Utf8JsonWriter writer)
    {
        int at = Plain ? -1 : InsertAt(Json);
        if (at < 0)
        {
            writer.WriteRawValue(Json, skipInputValidation: true);
            return;
        }
        byte[] scratch = System.Buffers.ArrayPool<byte>.Shared.Rent(Json.Length + Extra);
        try
        {
            writer.WriteRawValue(scratch.AsSpan(0, Compose(at, scratch)), skipInputValidation: true);
        }
        finally
        {
            System.Buffers.ArrayPool<byte>.Shared.Return(scratch);
        }
    }

    /// <summary>The result as written, in an array of its own.</summary>
    public byte[] ToArray()
    {
        int at = Plain ? -1 : InsertAt(Json);
        if (at < 0)
            return Json;
        byte[] scratch = System.Buffers.ArrayPool<byte>.Shared.Rent(Json.Length + Extra);
        try
        {
            return scratch.AsSpan(0, Compose(at, scratch)).ToArray();
        }
        finally
        {
            System.Buffers.ArrayPool<byte>.Shared.Return(scratch);
        }
    }

    /// <summary>Where the score goes: just inside the last <c>"@metadata":{</c>; -1 without one.</summary>
    private static int InsertAt(byte[] json)
    {
        int at = json.AsSpan().LastIndexOf(Metadata);
        return at < 0 ? -1 : at + Metadata.Length;
    }

    private int Compose(int at, Span<byte> into)
    {
        Json.AsSpan(0, at).CopyTo(into);
        int n = at;
        if (Score is { } score)
        {
            ScoreName.CopyTo(into[n..]);
            n += ScoreName.Length;
            if (!score.TryFormat(into[n..], out int written, "R", System.Globalization.CultureInfo.InvariantCulture))
                throw new InvalidOperationException("A score did not fit its buffer.");
            n += written;
        }
        if (Spatial is { } spatial)
        {
            if (Score != null)
                into[n++] = (byte)',';
            SpatialName.CopyTo(into[n..]);
            n += SpatialName.Length;
            spatial.CopyTo(into[n..]);
            n += spatial.Length;
        }
        if (Json[at] != (byte)'}')
            into[n++] = (byte)',';
        Json.AsSpan(at).CopyTo(into[n..]);
        return n + Json.Length - at;
    }
}
