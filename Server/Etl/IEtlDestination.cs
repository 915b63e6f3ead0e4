using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Etl;

/// <summary>
/// A source document's change as a batch carries it: the document (or its tombstone: <see cref="Deleted"/>, the id
/// lower-cased), what the script loaded for it, and whether what was loaded for it before goes first.
/// </summary>
internal sealed record EtlItem(string Id, string Collection, long Etag, bool Deleted, bool DeletesPrevious, IReadOnlyList<EtlLoad> Loads);

/// <summary>Where a transformation loads: one destination transaction per batch, all of it or none.</summary>
internal interface IEtlDestination : IDisposable
{
    /// <summary>
    /// Loads <paramref name="items"/> (their attachments read from <paramref name="tx"/>, the snapshot they were
    /// read in); returns once the destination committed them, throws when it did not.
    /// </summary>
    Task LoadAsync(IReadOnlyList<EtlItem> items, Transaction tx, CancellationToken cancellation);
}
