using System.Globalization;

namespace RavenLite.Client.Session;

/// <summary>Write assurance for a session's batches (<see cref="IAsyncAdvancedSessionOperations.WaitForReplicationAfterSaveChanges"/>).</summary>
public sealed record ReplicationBatchOptions(TimeSpan Timeout, bool ThrowOnTimeout, int Replicas, bool Majority)
{
    /// <summary>The <c>bulk_docs</c> query string that asks for it.</summary>
    public string QueryString =>
        "?waitForReplicasTimeout=" + Timeout.ToString("c", CultureInfo.InvariantCulture)
        + "&throwOnTimeoutInWaitForReplicas=" + (ThrowOnTimeout ? "true" : "false")
        + "&numberOfReplicasToWaitFor=" + (Majority ? "majority" : Replicas.ToString(CultureInfo.InvariantCulture));
}
