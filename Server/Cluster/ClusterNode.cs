using System.Net;
using System.Net.Sockets;
using DotNext.Net.Cluster;
using DotNext.Net.Cluster.Consensus.Raft;
using DotNext.Net.Cluster.Consensus.Raft.StateMachine;
using RavenLite.Server.Configuration;

namespace RavenLite.Server.Cluster;

/// <summary>
/// This server as a node of a Raft cluster (docs/cluster.md), on DotNext.Net.Cluster: a <see cref="RaftCluster"/> over
/// TCP on its Raft endpoint, a <see cref="WriteAheadLog"/> (flushed on every commit) feeding the
/// <see cref="ClusterStateMachine"/>, and the members kept in a file. A server that never joined a cluster is a cluster
/// of one, started on its own. Joining another cluster resets this node's cluster state (it waits, standing by, for the
/// leader to add it); the node's databases stay as they are. Files under <c>{DataDir}/System/Cluster</c>.
/// </summary>
public sealed class ClusterNode(ServerOptions options, NodeClient client, ILogger<ClusterNode> logger, IRaftTransportSecurity? transport = null) : IAsyncDisposable
{
    private static readonly TimeSpan ChangeTimeout = TimeSpan.FromSeconds(30);
    private readonly SemaphoreSlim _gate = new(1, 1); // one membership change or restart at a time
    private RaftCluster? _raft;
    private WriteAheadLog? _wal;
    private ClusterStateMachine? _machine;
    private string? _url;
    private TaskCompletionSource _leaderChanged = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>How long a command waits for a leader (an election after the leader failed takes a few election timeouts).</summary>
    private static readonly TimeSpan LeaderWait = TimeSpan.FromSeconds(10);

    private string Directory => Path.Combine(Path.GetFullPath(options.DataDir), "System", "Cluster");

    /// <summary>Where this node's Raft listens (and what the other nodes call it).</summary>
    public IPEndPoint RaftEndPoint { get; private set; } = new(IPAddress.Loopback, 0);

    /// <summary>This node's tag: given by the cluster it joined, else the configured one.</summary>
    public string Tag => options.NodeTag;

    /// <summary>Starts Raft: as a new cluster of one on a first start, else as it was (a member, or standing by).</summary>
    public async Task StartAsync(CancellationToken token)
    {
        System.IO.Directory.CreateDirectory(Directory);
        string tagFile = Path.Combine(Directory, "node-tag");
        if (File.Exists(tagFile))
            options.NodeTag = (await File.ReadAllTextAsync(tagFile, token).ConfigureAwait(false)).Trim();
        bool fresh = !File.Exists(MembersFile);
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            for (int attempt = 0; ; attempt++)
            {
                bool picked = options.RaftPort == 0 && !File.Exists(Path.Combine(Directory, "raft-port"));
                RaftEndPoint = new IPEndPoint(ListenAddress(), await RaftPortAsync(token).ConfigureAwait(false));
                try
                {
                    await StartRaftAsync(coldStart: fresh, token).ConfigureAwait(false);
                    return;
                }
                catch (SocketException e) when (picked && attempt < 5 && e.SocketErrorCode == SocketError.AddressAlreadyInUse)
                {
                    // The free port found was taken before Raft bound it (another server starting at the same moment): pick again.
                    File.Delete(Path.Combine(Directory, "raft-port"));
                }
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// Called once the HTTP server listens (<paramref name="url"/>: its address): a new cluster of one records itself as
    /// its first node, so that the cluster's topology names it.
    /// </summary>
    public async Task ListeningAsync(string url, CancellationToken token)
    {
        _url = url.TrimEnd('/');
        var raft = _raft!;
        if (Read(s => s.TopologyId.Length > 0) || raft.Members.Count > 1 || !File.Exists(Path.Combine(Directory, "cold-start")))
            return;
        await raft.Readiness.WaitAsync(ChangeTimeout, token).ConfigureAwait(false);
        await ReplicateAsync(ClusterCommands.Node(ClusterCommands.Bootstrap, Tag, new ClusterNodeInfo(_url, Format(RaftEndPoint), false), Guid.NewGuid().ToString()), token).ConfigureAwait(false);
        File.Delete(Path.Combine(Directory, "cold-start"));
    }

    private string MembersFile => Path.Combine(Directory, "members");

    private async Task StartRaftAsync(bool coldStart, CancellationToken token)
    {
        var machine = new ClusterStateMachine(new DirectoryInfo(Path.Combine(Directory, "state")))
        {
            Changed = () =>
            {
                Changed?.Invoke();
                _ = FollowRoleAsync();
            },
        };
        await machine.RestoreAsync(token).ConfigureAwait(false);
        var wal = new WriteAheadLog(new WriteAheadLog.Options { Location = Path.Combine(Directory, "log") }, machine);
        if (coldStart)
            await File.WriteAllTextAsync(Path.Combine(Directory, "cold-start"), "", token).ConfigureAwait(false);
        var config = new RaftCluster.TcpConfiguration(RaftEndPoint)
        {
            ColdStart = coldStart,
            LowerElectionTimeout = options.RaftElectionTimeoutMs,
            UpperElectionTimeout = options.RaftElectionTimeoutMs * 2,
            RequestTimeout = TimeSpan.FromMilliseconds(options.RaftElectionTimeoutMs * 2),
            ConfigurationStorage = new EndPointMembershipStorage(MembersFile),
            SslOptions = transport?.Options(),
        };
        var raft = new RaftCluster(config) { AuditTrail = wal };
        raft.LeaderChanged += (_, leader) =>
        {
            Logging.Log.ClusterLeaderChanged(logger, leader == null ? "(none)" : Format(leader.EndPoint));
            Interlocked.Exchange(ref _leaderChanged, new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously)).TrySetResult();
        };
        try
        {
            await raft.StartAsync(token).ConfigureAwait(false);
        }
        catch
        {
            raft.Dispose();
            await wal.DisposeAsync().ConfigureAwait(false);
            await machine.DisposeAsync().ConfigureAwait(false);
            throw;
        }
        (_raft, _wal, _machine) = (raft, wal, machine);
    }

    private async Task StopRaftAsync()
    {
        if (_raft is { } raft)
        {
            await raft.StopAsync(CancellationToken.None).ConfigureAwait(false);
            raft.Dispose();
        }
        if (_wal is { } wal)
            await wal.DisposeAsync().ConfigureAwait(false);
        if (_machine is { } machine)
            await machine.DisposeAsync().ConfigureAwait(false);
        (_raft, _wal, _machine) = (null, null, null);
    }

    /// <summary>Raised (on Raft's applier thread: keep it short) after this node applied a command that changed the state.</summary>
    public event Action? Changed;

    /// <summary>
    /// The database groups as this node has applied them, read without a lock — what every request to a database checks
    /// (empty on a server whose databases are all its own).
    /// </summary>
    public System.Collections.Immutable.ImmutableSortedDictionary<string, DatabaseGroup> Groups => _machine!.Groups;

    /// <summary>Reads the cluster's state as this node has applied it.</summary>
    public T Read<T>(Func<ClusterState, T> read) => _machine!.Read(read);

    /// <summary>The Raft term.</summary>
    public long Term => _raft?.Term ?? 0;

    /// <summary>The leader's tag as this node knows it (null while there is none).</summary>
    public string? LeaderTag => _raft?.Leader is { } leader ? Read(s => s.TagOf(Format(leader.EndPoint))) : null;

    /// <summary>RavenDB's name for this node's Raft state: Leader, Follower, Candidate (no leader known) or Passive (standing by).</summary>
    public string CurrentState => _raft switch
    {
        null => "Passive",
        { Leader: { IsRemote: false } } => "Leader",
        { Leader: not null } => "Follower",
        _ => Read(s => s.Nodes.Count) == 0 ? "Passive" : "Candidate",
    };

    /// <summary>Whether each other node answers this one's Raft (by Raft endpoint).</summary>
    public IReadOnlyDictionary<string, bool> Reachable =>
        (_raft?.Members ?? []).Where(m => m.IsRemote).ToDictionary(m => Format(m.EndPoint), m => m.Status == ClusterMemberStatus.Available);

    /// <summary>The last Raft index applied here.</summary>
    public long LastAppliedIndex => _wal?.LastAppliedIndex ?? 0;

    /// <summary>Waits until this node has applied <paramref name="index"/>; false on timeout.</summary>
    public async Task<bool> WaitForIndexAsync(long index, TimeSpan timeout, CancellationToken token)
    {
        using var cts = CancellationTokenSource.CreateLinkedTokenSource(token);
        cts.CancelAfter(timeout);
        try
        {
            await _wal!.WaitForApplyAsync(index, cts.Token).ConfigureAwait(false);
            return true;
        }
        catch (OperationCanceledException) when (!token.IsCancellationRequested)
        {
            return false;
        }
    }

    /// <summary>
    /// Appends a command through Raft and waits until it is committed by a majority and applied here (on the leader only;
    /// elsewhere <see cref="NotLeaderException"/>). Returns the index applied. Without a majority it times out: 503.
    /// </summary>
    public async Task<long> ReplicateAsync(byte[] command, CancellationToken token)
    {
        var raft = _raft ?? throw new UnavailableException(RavenExceptionTypes.NoLeader, "This node's cluster engine is restarting.");
        if (raft.Leader is not { IsRemote: false })
            throw new NotLeaderException(LeaderUrl());
        using var cts = CancellationTokenSource.CreateLinkedTokenSource(token); // Raft ends the wait itself when this node loses the leadership (its NotLeaderException)
        cts.CancelAfter(ChangeTimeout);
        try
        {
            await raft.ReplicateAsync(command, null, cts.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is DotNext.Net.Cluster.Consensus.Raft.NotLeaderException or DotNext.Net.Cluster.Consensus.Raft.QuorumUnreachableException)
        {
            // Raft stepped down (it could not reach a majority, or another node won an election) before the command committed.
            throw new NotLeaderException(null, "This node lost the leadership before the command was committed.");
        }
        catch (OperationCanceledException) when (!token.IsCancellationRequested)
        {
            throw new UnavailableException(RavenExceptionTypes.NoLeader, "The cluster did not commit the command in time: a majority of its nodes is not reachable.");
        }
        return _wal!.LastAppliedIndex;
    }

    /// <summary>
    /// Appends a command through Raft from any node: the leader replicates it itself; a follower sends it to the leader
    /// (<see cref="NodeClient.SendAsync"/>) and then waits until it has applied it too. Returns the command's Raft index.
    /// While no leader is known, or the known one cannot be reached, no longer leads or lost the leadership before
    /// committing, it waits for the leader to change and sends the command again (it carries a request id, which the
    /// state applies once), up to 10 s; then 503 <c>NoLeaderException</c> — what the minority side of a partition answers.
    /// </summary>
    public async Task<long> SendAsync(byte[] command, CancellationToken token)
    {
        var deadline = DateTime.UtcNow + LeaderWait;
        while (true)
        {
            var changed = Volatile.Read(ref _leaderChanged).Task;
            UnavailableException refused;
            try
            {
                if (_raft?.Leader is { IsRemote: false })
                    return await ReplicateAsync(command, token).ConfigureAwait(false);
                string leader = LeaderUrl() ?? throw new NotLeaderException(null);
                long index = await client.SendAsync(leader, command, token).ConfigureAwait(false);
                if (!await WaitForIndexAsync(index, ChangeTimeout, token).ConfigureAwait(false))
                    throw new UnavailableException(RavenExceptionTypes.NoLeader, $"The leader committed the command at index {index}, but this node did not apply it within {ChangeTimeout.TotalSeconds} s.");
                return index;
            }
            catch (UnavailableException e) when (e.ClientType == RavenExceptionTypes.NoLeader)
            {
                // Sent again safely whether or not it was appended: the state applies a request id once (ClusterState.RecentKept).
                refused = e;
            }
            var left = deadline - DateTime.UtcNow;
            if (left <= TimeSpan.Zero)
                throw refused;
            try
            {
                await changed.WaitAsync(left, token).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                throw refused;
            }
        }
    }

    /// <summary>
    /// A compare-exchange put (<paramref name="json"/>) or delete (null) of a group's database, under <paramref name="requestId"/>, through Raft (on the
    /// any node): it happens when <paramref name="expectedIndex"/> is the value's (0: absent); a written value's index is
    /// the command's Raft index.
    /// </summary>
    public Task<ClusterValueResult> CompareExchangeAsync(string requestId, string database, string key, long expectedIndex, string? json, CancellationToken token) =>
        AskAsync(requestId, ClusterCommands.Value(json != null ? ClusterCommands.PutValue : ClusterCommands.DeleteValue, requestId, database, key, expectedIndex, json), token);

    /// <summary>Takes the next value of identity <paramref name="name"/> of a group's database through Raft (from any node): never the same twice.</summary>
    public async Task<long> NextIdentityAsync(string database, string name, CancellationToken token) =>
        (await AskAsync(id => ClusterCommands.Identity(id, database, name), token).ConfigureAwait(false)).Index;

    private Task<ClusterValueResult> AskAsync(Func<string, byte[]> command, CancellationToken token)
    {
        string requestId = NewRequestId();
        return AskAsync(requestId, command(requestId), token);
    }

    /// <summary>A new id for a command whose result the node that asks it waits for.</summary>
    public static string NewRequestId() => Guid.NewGuid().ToString("N");

    /// <summary>Sends a command carrying <paramref name="requestId"/> (from any node) and returns the result it had when applied.</summary>
    public async Task<ClusterValueResult> AskAsync(string requestId, byte[] command, CancellationToken token)
    {
        await SendAsync(command, token).ConfigureAwait(false);
        return Read(s => s.Result(requestId)) ?? throw new InvalidOperationException($"Cluster command {requestId} was committed but left no result.");
    }

    /// <summary>
    /// Waits until this node has applied everything the leader had committed when asked (DotNext's read barrier): a
    /// read after it sees every write acknowledged before it began. 503 without a leader in time.
    /// </summary>
    public async Task ReadBarrierAsync(CancellationToken token)
    {
        var raft = _raft ?? throw new UnavailableException(RavenExceptionTypes.NoLeader, "This node's cluster engine is restarting.");
        using var cts = CancellationTokenSource.CreateLinkedTokenSource(token);
        cts.CancelAfter(ChangeTimeout);
        try
        {
            // Strong: the leader confirms it still leads by a round of replication rather than trusting a time lease, which
            // a leader starved of CPU (or paused) could outlive after another was elected.
            await raft.ApplyReadBarrierAsync(ReadBarrierType.Strong, cts.Token).ConfigureAwait(false);
        }
        catch (DotNext.Net.Cluster.Consensus.Raft.QuorumUnreachableException)
        {
            throw new NotLeaderException(null, "No leader can confirm the cluster's state: a majority of its nodes is not reachable from this one.");
        }
        catch (OperationCanceledException) when (!token.IsCancellationRequested)
        {
            throw new UnavailableException(RavenExceptionTypes.NoLeader, "No leader confirmed the cluster's state in time: a majority of its nodes is not reachable.");
        }
    }

    /// <summary>The leader's HTTP URL, or null when no leader is known.</summary>
    public string? LeaderUrl() => _raft?.Leader is { } leader ? Read(s => s.Nodes.Values.FirstOrDefault(n => n.RaftEndPoint == Format(leader.EndPoint))?.Url) : null;

    private int _followingRole;

    /// <summary>
    /// Makes this node's Raft match its role in the cluster's state: a watcher stands by (it follows and never stands
    /// for election), a member takes part again. A watcher that leads — demoted while leading — resigns first.
    /// </summary>
    private async Task FollowRoleAsync()
    {
        if (Interlocked.Exchange(ref _followingRole, 1) != 0)
            return;
        try
        {
            if (_raft is not { } raft || _machine == null)
                return;
            bool watcher = Read(s => s.Nodes.GetValueOrDefault(Tag)?.Watcher ?? false);
            if (watcher && !raft.Standby)
            {
                if (raft.Leader is { IsRemote: false })
                    await ((ICluster)raft).ResignAsync(CancellationToken.None).ConfigureAwait(false);
                await raft.EnableStandbyModeAsync(CancellationToken.None).ConfigureAwait(false);
            }
            else if (!watcher && raft.Standby)
            {
                await raft.RevertToNormalModeAsync(CancellationToken.None).ConfigureAwait(false);
            }
        }
        catch (ObjectDisposedException)
        {
            // Raft restarted or stopped meanwhile: the next change follows the role again.
        }
        finally
        {
            Volatile.Write(ref _followingRole, 0);
        }
    }

    /// <summary>The leader gives up its leadership (RavenDB's reelect): the nodes elect a leader again.</summary>
    public async Task ResignAsync(CancellationToken token)
    {
        var raft = _raft ?? throw new NotLeaderException(null);
        if (raft.Leader is not { IsRemote: false })
            throw new NotLeaderException(LeaderUrl());
        await ((ICluster)raft).ResignAsync(token).ConfigureAwait(false);
    }

    /// <summary>
    /// Adds the server at <paramref name="url"/> (on the leader): asks it to stand by under its new tag, adds its Raft
    /// endpoint to the members (the leader catches it up), then records it in the cluster's state.
    /// </summary>
    public async Task<(string Tag, long Index)> AddNodeAsync(string url, string? tag, bool watcher, CancellationToken token)
    {
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            if (_raft?.Leader is not { IsRemote: false })
                throw new NotLeaderException(LeaderUrl());
            url = url.TrimEnd('/');
            if (Read(s => s.Nodes.Values.Any(n => string.Equals(n.Url, url, StringComparison.OrdinalIgnoreCase))))
                throw new BadRequestException($"{url} is already a node of this cluster.");
            tag ??= Read(s => s.NextTag());
            if (tag.Length is < 1 or > 4 || !tag.All(char.IsAsciiLetterUpper))
                throw new BadRequestException($"Node tag '{tag}' must be one to four upper-case letters.");
            if (Read(s => s.Nodes.ContainsKey(tag)))
                throw new BadRequestException($"The cluster already has a node tagged {tag}.");
            string raftEndPoint = await client.JoinAsync(url, tag, _url ?? "", token).ConfigureAwait(false);
            using (var cts = CancellationTokenSource.CreateLinkedTokenSource(token))
            {
                cts.CancelAfter(ChangeTimeout);
                await _raft.AddMemberAsync(IPEndPoint.Parse(raftEndPoint), cts.Token).ConfigureAwait(false);
            }
            long index = await ReplicateAsync(ClusterCommands.Node(ClusterCommands.AddNode, tag, new ClusterNodeInfo(url, raftEndPoint, watcher)), token).ConfigureAwait(false);
            Logging.Log.ClusterNodeAdded(logger, tag, url, raftEndPoint);
            return (tag, index);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>Removes node <paramref name="tag"/> (on the leader): from the Raft members, then from the cluster's state.</summary>
    public async Task<long> RemoveNodeAsync(string tag, CancellationToken token)
    {
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            if (_raft?.Leader is not { IsRemote: false })
                throw new NotLeaderException(LeaderUrl());
            var node = Read(s => s.Nodes.GetValueOrDefault(tag)) ?? throw new NotFoundException(RavenExceptionTypes.BadRequest, $"The cluster has no node tagged {tag}.");
            if (tag == Tag)
                throw new BadRequestException("The leader cannot remove itself: demote it or remove it from another node once another leads.");
            using (var cts = CancellationTokenSource.CreateLinkedTokenSource(token))
            {
                cts.CancelAfter(ChangeTimeout);
                await _raft.RemoveMemberAsync(IPEndPoint.Parse(node.RaftEndPoint), cts.Token).ConfigureAwait(false);
            }
            return await ReplicateAsync(ClusterCommands.Remove(tag), token).ConfigureAwait(false);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary>
    /// Asked by a leader adding this node: drops this node's own cluster (refused when it has other nodes), takes the
    /// tag it is given and stands by until the leader adds it. Returns this node's Raft endpoint.
    /// </summary>
    public async Task<string> StandByAsync(string tag, CancellationToken token)
    {
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            if (Read(s => s.Nodes.Count) > 1 || (_raft?.Members.Count ?? 0) > 1)
                throw new BadRequestException($"This node ({Tag}) is a node of a cluster with other nodes: remove it from that cluster first.");
            await StopRaftAsync().ConfigureAwait(false);
            foreach (string part in new[] { "log", "state" })
                if (System.IO.Directory.Exists(Path.Combine(Directory, part)))
                    System.IO.Directory.Delete(Path.Combine(Directory, part), recursive: true);
            File.Delete(MembersFile);
            File.Delete(Path.Combine(Directory, "cold-start"));
            await File.WriteAllTextAsync(Path.Combine(Directory, "node-tag"), tag, token).ConfigureAwait(false);
            options.NodeTag = tag;
            await StartRaftAsync(coldStart: false, token).ConfigureAwait(false);
            Logging.Log.ClusterStandingBy(logger, tag, Format(RaftEndPoint));
            return Format(RaftEndPoint);
        }
        finally
        {
            _gate.Release();
        }
    }

    /// <summary><c>host:port</c> of an endpoint.</summary>
    public static string Format(EndPoint endPoint) => endPoint switch
    {
        IPEndPoint ip => ip.ToString(),
        DnsEndPoint dns => $"{dns.Host}:{dns.Port}",
        _ => endPoint.ToString() ?? "",
    };

    private IPAddress ListenAddress()
    {
        string host = new Uri(options.ServerUrl).Host.Trim('[', ']');
        return host == "localhost" ? IPAddress.Loopback : IPAddress.TryParse(host, out var ip) && !ip.Equals(IPAddress.Any) && !ip.Equals(IPAddress.IPv6Any) ? ip : IPAddress.Loopback;
    }

    /// <summary>The configured Raft port, else the one picked on first start (kept, since the other nodes know it).</summary>
    private async Task<int> RaftPortAsync(CancellationToken token)
    {
        if (options.RaftPort != 0)
            return options.RaftPort;
        string file = Path.Combine(Directory, "raft-port");
        if (File.Exists(file))
            return int.Parse(await File.ReadAllTextAsync(file, token).ConfigureAwait(false), CultureInfo.InvariantCulture);
        var probe = new TcpListener(ListenAddress(), 0);
        probe.Start();
        int port = ((IPEndPoint)probe.LocalEndpoint).Port;
        probe.Stop();
        await File.WriteAllTextAsync(file, port.ToString(CultureInfo.InvariantCulture), token).ConfigureAwait(false);
        return port;
    }

    public async ValueTask DisposeAsync()
    {
        await _gate.WaitAsync().ConfigureAwait(false);
        try
        {
            await StopRaftAsync().ConfigureAwait(false);
        }
        finally
        {
            _gate.Release();
        }
    }
}
