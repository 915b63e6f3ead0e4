namespace RavenLite.Server.Indexing;

/// <summary>What an index maps (RavenDB's <c>IndexSourceType</c>): documents, or the counters or time series of documents.</summary>
public enum IndexSourceType
{
    /// <summary>Documents of collections (one entry per document).</summary>
    Documents,
    /// <summary>Counters: the map sees one item per counter, <c>{Name, Value, DocumentId}</c>.</summary>
    Counters,
    /// <summary>Time series: the map sees one item per series, <c>{Name, DocumentId, Start, End, Count, Entries: [{Timestamp, Tag, Values, Value}]}</c>.</summary>
    TimeSeries,
}

/// <summary>
/// The source of one map: a collection (<see cref="CompiledIndex.AllDocuments"/>: every one) and, for counters and time
/// series, the one counter or series it reads (null: all of the document's). It travels through compiled C# code as one
/// string (<see cref="Encode"/>), so a map compiled once (or loaded from the disk cache) still knows what it reads.
/// </summary>
public sealed record IndexSource(IndexSourceType Kind, string Collection, string? ItemName)
{
    private const char Separator = '\u001f';

    /// <summary>A document collection's source.</summary>
    public static IndexSource Documents(string collection) => new(IndexSourceType.Documents, collection, null);

    /// <summary>The collection name for documents; <c>\u001f{Kind}\u001f{Collection}[\u001f{ItemName}]</c> for counters and time series.</summary>
    public string Encode() => Kind == IndexSourceType.Documents ? Collection
        : $"{Separator}{Kind}{Separator}{Collection}" + (ItemName != null ? $"{Separator}{ItemName}" : "");

    /// <summary>The inverse of <see cref="Encode"/>.</summary>
    public static IndexSource Decode(string encoded)
    {
        if (encoded.Length == 0 || encoded[0] != Separator)
            return Documents(encoded);
        var parts = encoded[1..].Split(Separator);
        return new IndexSource(Enum.Parse<IndexSourceType>(parts[0]), parts[1], parts.Length > 2 ? parts[2] : null);
    }

    /// <summary>The key of this map among the index's maps: one map per collection and item name.</summary>
    public string Key => ItemName == null ? Collection : Collection + "/" + ItemName;

    /// <summary>True when this source reads the counter or series <paramref name="name"/>.</summary>
    public bool Reads(string name) => ItemName == null || string.Equals(ItemName, name, StringComparison.OrdinalIgnoreCase);
}
