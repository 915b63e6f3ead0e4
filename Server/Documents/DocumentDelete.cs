namespace RavenLite.Server.Documents;

/// <summary>A document just deleted by <see cref="DocumentsWriteContext"/>, as the <see cref="IDocumentExtension"/>s see it.</summary>
public readonly ref struct DocumentDelete
{
    /// <summary>The document's storage key (lower-cased id).</summary>
    public required ReadOnlySpan<byte> Key { get; init; }

    /// <summary>The version that was deleted.</summary>
    public required StoredDocument Document { get; init; }

    /// <summary>The tombstone's etag.</summary>
    public required long Etag { get; init; }

    /// <summary>The tombstone's change vector.</summary>
    public required string ChangeVector { get; init; }

    /// <summary>The extras the deleted version carried (null: none).</summary>
    public required DocumentExtras? Extras { get; init; }

    /// <summary>The <c>@expires</c> / <c>@refresh</c> dates of the deleted version.</summary>
    public required (long? Expires, long? Refresh) Dates { get; init; }
}
