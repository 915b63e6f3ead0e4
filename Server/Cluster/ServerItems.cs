using System.Text.Json.Nodes;

namespace RavenLite.Server.Cluster;

/// <summary>
/// The server-wide state every node of the cluster keeps alike (docs/cluster.md "Server-wide state"): the registered
/// client certificates and the server's client configuration. A change goes through Raft as a
/// <see cref="ClusterCommands.PutServerItem"/> from whichever node was asked; every node then brings its own copies in
/// line with the cluster's items — each kind through its <see cref="IServerItemFollower"/> — whenever it applies a
/// command (and once it has committed its own change, before answering). Level-triggered: a node that was down catches
/// up from the items, whatever it missed.
/// </summary>
public sealed class ServerItems : IDisposable
{
    /// <summary>The item holding the server's client configuration (RavenDB's <c>ClientConfiguration</c>).</summary>
    public const string ClientConfigurationKey = "configuration/client";

    private readonly ClusterNode _node;
    private readonly ILogger<ServerItems> _logger;
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly Dictionary<string, long> _synced = new(StringComparer.Ordinal); // key → index brought in line here
    private IServerItemFollower[] _followers = [];

    public ServerItems(ClusterNode node, ILogger<ServerItems> logger)
    {
        _node = node;
        _logger = logger;
        node.Changed += () => _ = Task.Run(SyncInBackgroundAsync);
    }

    /// <summary>The followers of the kinds this node keeps (set at start-up, before the first sync).</summary>
    public void Follow(IEnumerable<IServerItemFollower> followers) => _followers = [.. followers];

    /// <summary>Sets the server-wide client configuration on every node; returns the Raft index.</summary>
    public Task<long> PutClientConfigurationAsync(JsonObject configuration, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return PutAsync(ClientConfigurationKey, configuration.ToJsonString(), token);
    }

    /// <summary>Puts item <paramref name="key"/> (<paramref name="json"/> null: deletes it) through Raft and brings this node in line; returns the Raft index.</summary>
    public async Task<long> PutAsync(string key, string? json, CancellationToken token)
    {
        long index = await _node.SendAsync(ClusterCommands.ServerItem(ClusterNode.NewRequestId(), key, json), token).ConfigureAwait(false);
        await SyncAsync(token).ConfigureAwait(false);
        return index;
    }

    private async Task SyncInBackgroundAsync()
    {
        try
        {
            await SyncAsync(CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or JsonException or InvalidOperationException or ObjectDisposedException)
        {
            Logging.Log.ServerItemsFailed(_logger, e.Message);
        }
    }

    /// <summary>Hands each follower the cluster's items of its kind that changed since it was last handed them.</summary>
    public async Task SyncAsync(CancellationToken token)
    {
        if (_followers.Length == 0)
            return; // not started yet: nothing is marked as brought in line before its follower is known
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            foreach (var item in _node.Read(s => s.ServerItems("")))
            {
                if (_synced.GetValueOrDefault(item.Key) == item.Index)
                    continue;
                foreach (var follower in _followers)
                    if (item.Key.StartsWith(follower.Prefix, StringComparison.Ordinal))
                        follower.Apply(item.Key, item.Json);
                _synced[item.Key] = item.Index;
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    public void Dispose() => _gate.Dispose();
}
