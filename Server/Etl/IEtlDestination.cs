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
    /// <summary>A new batch of changes read in <paramref name="tx"/> (which lives until the batch is disposed).</summary>
    IEtlBatch NewBatch(Transaction tx);
}

/// <summary>A batch: changes added as they are read (each may be prepared for the destination at once), then loaded.</summary>
internal interface IEtlBatch : IDisposable
{
    void Add(EtlItem item);

    /// <summary>Changes added.</summary>
    int Count { get; }

    /// <summary>Loads the batch; returns once the destination committed it, throws when it did not.</summary>
    Task LoadAsync(CancellationToken cancellation);
}
