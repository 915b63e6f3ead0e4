namespace RavenLite.Server.Documents;

/// <summary>
/// A document as read from storage, copied out of the transaction: its id in stored casing, its
/// collection, etag, change vector, last-modified time and the full JSON (with <c>@metadata</c>
/// already carrying <c>@id</c>, <c>@collection</c>, <c>@change-vector</c>, <c>@last-modified</c>).
/// </summary>
public sealed record StoredDocument(string Id, string Collection, long Etag, string ChangeVector, DateTime LastModified, byte[] Json);

/// <summary>What a put or delete did, for the answer.</summary>
public sealed record WriteResult(string Id, string Collection, long Etag, string ChangeVector, DateTime LastModified, bool Deleted);
