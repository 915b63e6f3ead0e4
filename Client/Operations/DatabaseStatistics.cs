namespace RavenLite.Client.Operations;

/// <summary>Counts of one database.</summary>
/// <param name="CountOfDocuments">Live documents.</param>
/// <param name="CountOfIndexes">Indexes.</param>
/// <param name="CountOfTombstones">Deletion markers kept for indexing.</param>
/// <param name="DatabaseId">The database's id (part of change vectors).</param>
/// <param name="LastDocEtag">Etag of the latest write.</param>
public sealed record DatabaseStatistics(long CountOfDocuments, long CountOfIndexes, long CountOfTombstones, string DatabaseId, long LastDocEtag);
