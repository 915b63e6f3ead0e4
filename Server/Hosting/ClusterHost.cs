using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using RavenLite.Server.Cluster;

namespace RavenLite.Server.Hosting;

/// <summary>Starts this node's Raft, its database groups, observer, server-wide items and peers with the server, tells it the address the server listens on, and stops them last.</summary>
internal sealed class ClusterHost(ClusterNode node, DatabaseGroups groups, ClusterObserver observer, ClusterPeers peers, ServerItems items, IEnumerable<IServerItemFollower> followers, IServer server, IHostApplicationLifetime lifetime, ILogger<ClusterHost> logger) : IHostedService
{
    public async Task StartAsync(CancellationToken cancellationToken)
    {
        items.Follow(followers);
        await node.StartAsync(cancellationToken).ConfigureAwait(false);
        // Waited for inside the start: a started server's topology names it (a new cluster of one records itself at once).
        lifetime.ApplicationStarted.Register(() => ListeningAsync(lifetime.ApplicationStopping).GetAwaiter().GetResult());
        groups.Start();
        observer.Start();
        await items.SyncAsync(cancellationToken).ConfigureAwait(false); // the items applied from the log before this node listened
    }

    private async Task ListeningAsync(CancellationToken stopping)
    {
        string? url = server.Features.Get<IServerAddressesFeature>()?.Addresses.FirstOrDefault();
        if (url == null)
            return;
        try
        {
            await node.ListeningAsync(url.Replace("://[::]", "://127.0.0.1", StringComparison.Ordinal).Replace("://0.0.0.0", "://127.0.0.1", StringComparison.Ordinal), stopping).ConfigureAwait(false);
        }
        catch (Exception e) when (e is not OperationCanceledException || !stopping.IsCancellationRequested)
        {
            Logging.Log.ClusterBootstrapFailed(logger, e.Message);
        }
        peers.Start(); // once this node has recorded itself: the peers it adds get the next tags
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        await peers.DisposeAsync().ConfigureAwait(false);
        await observer.DisposeAsync().ConfigureAwait(false);
        await groups.DisposeAsync().ConfigureAwait(false);
        await node.DisposeAsync().ConfigureAwait(false);
    }
}
