using RavenLite.Server.Databases;
using RavenLite.Server.Http;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// RavenDB's write assurance on a batch (docs/replication.md "Write assurance"):
/// <c>?waitForReplicasTimeout=hh:mm:ss&amp;numberOfReplicasToWaitFor=n|majority&amp;throwOnTimeoutInWaitForReplicas=true|false</c>.
/// After the local commit, the answer waits until that many replication destinations acknowledged the batch; on
/// timeout the write stays and the client is told (408 <c>RavenTimeoutException</c>) unless it asked not to be.
/// </summary>
internal sealed record WriteAssurance(TimeSpan Timeout, int Replicas, bool ThrowOnTimeout)
{
    /// <summary>The request's write assurance, or null when it asks for none; 400 when its parameters are malformed.</summary>
    public static WriteAssurance? Parse(HttpRequest request)
    {
        if (RequestParsing.Query(request, "waitForReplicasTimeout") is not { Length: > 0 } timeoutText)
            return null;
        if (!TimeSpan.TryParse(timeoutText, CultureInfo.InvariantCulture, out var timeout) || timeout < TimeSpan.Zero)
            throw new BadRequestException($"waitForReplicasTimeout '{timeoutText}' is not a time span (hh:mm:ss).");
        string count = RequestParsing.Query(request, "numberOfReplicasToWaitFor") ?? "1";
        int replicas = count.Equals("majority", StringComparison.OrdinalIgnoreCase) ? 0
            : int.TryParse(count, NumberStyles.None, CultureInfo.InvariantCulture, out int n) && n >= 1 ? n
            : throw new BadRequestException($"numberOfReplicasToWaitFor '{count}' must be a positive number or 'majority'.");
        bool throwOnTimeout = !string.Equals(RequestParsing.Query(request, "throwOnTimeoutInWaitForReplicas"), "false", StringComparison.OrdinalIgnoreCase);
        return new WriteAssurance(timeout, replicas, throwOnTimeout);
    }

    /// <summary>Waits for the destinations to acknowledge <paramref name="etag"/>; throws (408) on timeout when asked to.</summary>
    public async Task WaitAsync(Database db, long etag, CancellationToken cancellation)
    {
        var (confirmed, needed) = await db.Replication.WaitForReplicasAsync(etag, Replicas, Timeout, cancellation).ConfigureAwait(false);
        if (confirmed < needed && ThrowOnTimeout)
            throw new ReplicationTimeoutException(
                $"Could not verify that etag {etag} was replicated to {needed} servers in {Timeout}. So far, it only replicated to {confirmed}.");
    }
}
