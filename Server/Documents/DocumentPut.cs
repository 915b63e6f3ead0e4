namespace RavenLite.Server.Documents;

/// <summary>
/// A version just stored by <see cref="DocumentsWriteContext"/>, as the <see cref="IDocumentExtension"/>s see it. The
/// spans are valid only during the call.
/// </summary>
public readonly ref struct DocumentPut
{
    /// <summary>The document's storage key (lower-cased id).</summary>
    public required ReadOnlySpan<byte> Key { get; init; }

    /// <summary>The id in its stored casing.</summary>
    public required string Id { get; init; }

    /// <summary>The collection the document is stored in.</summary>
    public required string Collection { get; init; }

    /// <summary>The version's etag.</summary>
    public required long Etag { get; init; }

    /// <summary>The version's change vector.</summary>
    public required string ChangeVector { get; init; }

    /// <summary>The version's last-modified time (UTC).</summary>
    public required DateTime LastModified { get; init; }

    /// <summary>The body as <see cref="DocumentPreparer"/> prepared it.</summary>
    public required ReadOnlySpan<byte> Prepared { get; init; }

    /// <summary>The length of <see cref="Prepared"/>'s prefix before the client's metadata.</summary>
    public required int PrefixLength { get; init; }

    /// <summary>The extras the version carries (null: none).</summary>
    public required DocumentExtras? Extras { get; init; }

    /// <summary>True when no document had this id before.</summary>
    public required bool IsNew { get; init; }

    /// <summary>The <c>@expires</c> / <c>@refresh</c> dates of the version replaced (both null for a new document).</summary>
    public required (long? Expires, long? Refresh) DatesBefore { get; init; }

    /// <summary>The <c>@expires</c> / <c>@refresh</c> dates of this version.</summary>
    public required (long? Expires, long? Refresh) Dates { get; init; }
}
