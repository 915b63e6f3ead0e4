using RavenLite.Server.Batches;
using RavenLite.Server.Databases;
using RavenLite.Server.Http;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// RavenDB's wait for indexes on a batch: <c>?waitForIndexesTimeout=hh:mm:ss&amp;waitForIndexThrow=true|false&amp;waitForSpecificIndex=name..</c>.
/// After the commit, the answer waits until the indexes the batch affects — those named, else those over the collections
/// it wrote (every index when it holds more than document puts) — have processed it; on timeout, when asked to throw
/// (the default), the write stays and the client gets a 408 <c>TimeoutException</c>.
/// </summary>
internal sealed record IndexAssurance(TimeSpan Timeout, bool ThrowOnTimeout, IReadOnlyList<string> Indexes)
{
    /// <summary>The request's wait for indexes, or null when it asks for none; 400 when its parameters are malformed.</summary>
    public static IndexAssurance? Parse(HttpRequest request)
    {
        if (RequestParsing.Query(request, "waitForIndexesTimeout") is not { Length: > 0 } timeoutText)
            return null;
        if (!TimeSpan.TryParse(timeoutText, CultureInfo.InvariantCulture, out var timeout) || timeout < TimeSpan.Zero)
            throw new BadRequestException($"waitForIndexesTimeout '{timeoutText}' is not a time span (hh:mm:ss).");
        bool throwOnTimeout = !string.Equals(RequestParsing.Query(request, "waitForIndexThrow"), "false", StringComparison.OrdinalIgnoreCase);
        return new IndexAssurance(timeout, throwOnTimeout, [.. request.Query["waitForSpecificIndex"].OfType<string>().Where(n => n.Length > 0)]);
    }

    /// <summary>The indexes <paramref name="items"/> affect (400 for a named index the database does not have), with this wait.</summary>
    public (IndexAssurance Wait, List<Indexing.Index> Indexes) Affected(Database db, IReadOnlyList<BatchItem> items)
    {
        if (Indexes.Count > 0)
            return (this, [.. Indexes.Select(n => db.Indexes.Get(n) ?? throw new BadRequestException($"waitForSpecificIndex names index '{n}', which database '{db.Name}' does not have."))]);
        if (!items.All(i => i is PutItem))
            return (this, [.. db.Indexes.All]);
        var collections = items.OfType<PutItem>().Select(p => p.Collection).ToHashSet(StringComparer.OrdinalIgnoreCase);
        return (this, [.. db.Indexes.All.Where(i => collections.Any(c => i.Compiled.SourceOf(c) != null))]);
    }

    /// <summary>Waits for <paramref name="indexes"/> to process everything written so far; throws (408) on timeout when asked to.</summary>
    public async Task WaitAsync(IReadOnlyList<Indexing.Index> indexes, CancellationToken cancellation)
    {
        var deadline = DateTime.UtcNow + Timeout;
        var stale = new List<string>();
        foreach (var index in indexes)
        {
            var left = deadline - DateTime.UtcNow;
            if (!await index.WaitForNonStaleAsync(left > TimeSpan.Zero ? left : TimeSpan.Zero, cancellation).ConfigureAwait(false))
                stale.Add(index.Name);
        }
        if (stale.Count > 0 && ThrowOnTimeout)
            throw new TimeoutException($"After waiting for {Timeout}, could not verify that all indexes have caught up with the changes of this batch. Total relevant indexes: {indexes.Count}, total stale indexes: {stale.Count} ({string.Join(", ", stale)}).");
    }
}
