using RavenLite.Server.Configuration;

namespace RavenLite.Server.Cluster;

/// <summary>
/// The peers a node is started with (<see cref="ServerOptions.ClusterPeers"/>, docs/cluster.md "Forming a cluster"):
/// while this node leads, it adds each peer URL that is not yet a node of its cluster — as <c>PUT /admin/cluster/node</c>
/// would — trying again every 2 s until every peer is in (a peer may start later than this node). A peer that refuses
/// (a node of another cluster) is logged and tried again.
/// </summary>
public sealed class ClusterPeers(ClusterNode node, ServerOptions options, ILogger<ClusterPeers> logger) : IAsyncDisposable
{
    private readonly CancellationTokenSource _stop = new();
    private Task _loop = Task.CompletedTask;

    public void Start()
    {
        if (options.ClusterPeerUrls.Count > 0)
            _loop = Task.Run(LoopAsync);
    }

    private async Task LoopAsync()
    {
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(2));
        try
        {
            do
            {
                if (node.CurrentState != "Leader" || node.Read(s => s.Nodes.Count) == 0)
                    continue; // not leading, or not yet recorded as the cluster's first node
                var missing = node.Read(s => options.ClusterPeerUrls
                    .Where(p => !s.Nodes.Values.Any(n => string.Equals(n.Url, p, StringComparison.OrdinalIgnoreCase))).ToList());
                if (missing.Count == 0)
                    return;
                foreach (string peer in missing)
                {
                    try
                    {
                        var (tag, _) = await node.AddNodeAsync(peer, null, watcher: false, _stop.Token).ConfigureAwait(false);
                        Logging.Log.ClusterPeerAdded(logger, peer, tag);
                    }
                    catch (DomainException e)
                    {
                        Logging.Log.ClusterPeerNotAdded(logger, peer, e.Message);
                    }
                }
            }
            while (await timer.WaitForNextTickAsync(_stop.Token).ConfigureAwait(false));
        }
        catch (OperationCanceledException) when (_stop.IsCancellationRequested)
        {
        }
    }

    private int _disposed;

    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
            return;
        await _stop.CancelAsync().ConfigureAwait(false);
        await _loop.ConfigureAwait(false);
        _stop.Dispose();
    }
}
