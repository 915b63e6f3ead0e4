namespace RavenLite.Server.Etl;

/// <summary>What one <c>loadTo</c> call of a script emitted, kept as plain values (the script's engine does not outlive the call).</summary>
public abstract record EtlLoad(string Target)
{
    /// <summary>A document for a RavenDB-protocol destination (<c>@metadata.@collection</c> set), with the extensions the script added to it.</summary>
    public sealed record RavenDocument(string Collection, byte[] Json) : EtlLoad(Collection)
    {
        /// <summary>(name at the destination, name on the source document).</summary>
        public List<(string Name, string Source)> Attachments { get; } = [];

        public List<string> Counters { get; } = [];

        /// <summary>(name, from, to) in the store's milliseconds (<c>TimeSeriesPoint.ToMilliseconds</c>).</summary>
        public List<(string Name, long From, long To)> TimeSeries { get; } = [];
    }

    /// <summary>
    /// A row for a table: column names and values in the script's order. Rows of one script with the same names share
    /// one <paramref name="Columns"/> array (a batch groups its rows by it).
    /// </summary>
    public sealed record SqlRow(string Table, string[] Columns, object?[] Values) : EtlLoad(Table);

    /// <summary>A column value that is an object or array: sent as its JSON text.</summary>
    public sealed record JsonText(string Json);

    /// <summary>A column value of an explicit type (<c>{Type, Value}</c>, <c>varchar(..)</c>).</summary>
    public sealed record TypedValue(string Type, object? Value);

    /// <summary>A column value that is the content of an attachment of the document (<c>loadAttachment(name)</c>).</summary>
    public sealed record AttachmentContent(string DocumentId, string Name);
}
