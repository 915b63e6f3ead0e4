using RavenLite.Server.Configuration;
using RavenLite.Server.Databases;

namespace RavenLite.Server.Cluster;

/// <summary>
/// The cluster observer (docs/cluster.md "The observer"), run by the leader once a second: a database group's member
/// that the leader's Raft has not reached for <see cref="ServerOptions.ClusterRehabDelaySeconds"/> moves to Rehab
/// (clients stop preferring it; it keeps its instance and is still fed); a rehab that answers again and has caught up —
/// its mentor's instance (<see cref="DatabaseGroup.MentorOf"/>, asked over HTTP when it is another node) has nothing it
/// has not acknowledged — moves back to Member, and so does a promotable (a node added to the group) once it has caught up.
/// </summary>
public sealed class ClusterObserver(ClusterNode node, DatabaseRegistry registry, NodeClient client, ServerOptions options, ILogger<ClusterObserver> logger) : IAsyncDisposable
{
    private readonly CancellationTokenSource _stop = new();
    private readonly Dictionary<(string Database, string Tag), DateTime> _unreachableSince = [];
    private Task _loop = Task.CompletedTask;
    private int _disposed;

    public void Start() => _loop = Task.Run(LoopAsync);

    private async Task LoopAsync()
    {
        using var timer = new PeriodicTimer(TimeSpan.FromSeconds(1));
        try
        {
            while (await timer.WaitForNextTickAsync(_stop.Token).ConfigureAwait(false))
            {
                if (node.CurrentState != "Leader")
                {
                    _unreachableSince.Clear();
                    continue;
                }
                try
                {
                    await ObserveAsync(_stop.Token).ConfigureAwait(false);
                }
                catch (Exception e) when (e is DomainException or IOException or InvalidOperationException && !_stop.IsCancellationRequested)
                {
                    Logging.Log.ClusterObserverFailed(logger, e.Message);
                }
            }
        }
        catch (OperationCanceledException)
        {
        }
    }

    private async Task ObserveAsync(CancellationToken token)
    {
        var reachable = node.Reachable;
        string me = node.Tag;
        var groups = node.Read(s => s.Databases.Select(d => (Name: d.Key, Group: d.Value,
            EndPoints: d.Value.All.Where(s.Nodes.ContainsKey).ToDictionary(t => t, t => s.Nodes[t].RaftEndPoint),
            Urls: d.Value.All.Where(s.Nodes.ContainsKey).ToDictionary(t => t, t => s.Nodes[t].Url))).ToList());
        var now = DateTime.UtcNow;
        foreach (var (name, group, endPoints, urls) in groups)
        {
            foreach (string tag in group.All)
            {
                bool up = tag == me || (endPoints.TryGetValue(tag, out string? ep) && reachable.TryGetValue(ep, out bool ok) && ok);
                if (up)
                    _unreachableSince.Remove((name, tag));
                else
                    _unreachableSince.TryAdd((name, tag), now);
                if (group.Members.Contains(tag) && !up && now - _unreachableSince[(name, tag)] >= TimeSpan.FromSeconds(options.ClusterRehabDelaySeconds)
                    && group.Members.Count > 1)
                {
                    Logging.Log.ClusterMemberState(logger, name, tag, "Rehab");
                    await node.ReplicateAsync(ClusterCommands.MemberState(name, tag, rehab: true), token).ConfigureAwait(false);
                }
                else if ((group.Rehabs.Contains(tag) || group.Promotables.Contains(tag)) && up && await CaughtUpAsync(name, group, tag, urls, token).ConfigureAwait(false))
                {
                    Logging.Log.ClusterMemberState(logger, name, tag, "Member");
                    await node.ReplicateAsync(ClusterCommands.MemberState(name, tag, rehab: false), token).ConfigureAwait(false);
                }
            }
        }
    }

    /// <summary>Whether rehab or promotable <paramref name="tag"/> has acknowledged everything its mentor's instance holds.</summary>
    private async Task<bool> CaughtUpAsync(string database, DatabaseGroup group, string tag, Dictionary<string, string> urls, CancellationToken token)
    {
        string? mentor = group.MentorOf(tag);
        if (mentor == null || !urls.TryGetValue(mentor, out string? url))
            return false;
        if (mentor != node.Tag)
            return await client.CaughtUpAsync(url, database, tag, token).ConfigureAwait(false);
        if (registry.Find(database) == null)
            return false;
        var db = registry.Acquire(database);
        try
        {
            return db.Replication.CaughtUp(tag);
        }
        finally
        {
            db.Release();
        }
    }

    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
            return;
        await _stop.CancelAsync().ConfigureAwait(false);
        await _loop.ConfigureAwait(false);
        _stop.Dispose();
    }
}
