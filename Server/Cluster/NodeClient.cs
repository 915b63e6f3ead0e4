namespace RavenLite.Server.Cluster;

/// <summary>
/// What a node asks another over HTTP while changing the cluster (docs/cluster.md "Forming a cluster"), through the
/// client this server calls other servers with — its replication connector's: with its server certificate on a
/// secured server, which the other nodes take as a node of their cluster.
/// </summary>
public sealed class NodeClient(Replication.IReplicationConnector? connector = null)
{
    private readonly HttpClient http = (connector ?? new Replication.PlainReplicationConnector()).Http;

    /// <summary>The client the calls go through (also what forwards a follower's cluster changes to the leader).</summary>
    public HttpClient Http => http;

    /// <summary>
    /// Asks the server at <paramref name="url"/> to stand by as node <paramref name="tag"/> of this cluster
    /// (<c>POST /admin/cluster/join</c>); returns its Raft endpoint. 400 with its reason when it refuses or cannot be reached.
    /// </summary>
    public async Task<string> JoinAsync(string url, string tag, string leaderUrl, CancellationToken token)
    {
        HttpResponseMessage response;
        try
        {
            response = await http.PostAsync($"{url}/admin/cluster/join?tag={Uri.EscapeDataString(tag)}&leader={Uri.EscapeDataString(leaderUrl)}", null, token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is HttpRequestException or TaskCanceledException && !token.IsCancellationRequested)
        {
            throw new BadRequestException($"Cannot reach {url} to add it to the cluster: {e.Message}");
        }
        using (response)
        {
            string body = await response.Content.ReadAsStringAsync(token).ConfigureAwait(false);
            if (!response.IsSuccessStatusCode)
                throw new BadRequestException($"{url} refused to join the cluster ({(int)response.StatusCode}): {body}");
            using var json = JsonDocument.Parse(body);
            return json.RootElement.GetProperty("RaftEndPoint").GetString() ?? throw new BadRequestException($"{url} answered no Raft endpoint.");
        }
    }

    /// <summary>
    /// Asks the mentor at <paramref name="url"/> whether group node <paramref name="tag"/> has acknowledged everything
    /// the mentor's instance of <paramref name="database"/> holds (<c>GET /admin/cluster/caught-up</c>); false when it
    /// cannot be reached.
    /// </summary>
    public async Task<bool> CaughtUpAsync(string url, string database, string tag, CancellationToken token)
    {
        try
        {
            using var response = await http.GetAsync($"{url}/admin/cluster/caught-up?name={Uri.EscapeDataString(database)}&node={Uri.EscapeDataString(tag)}", token).ConfigureAwait(false);
            if (!response.IsSuccessStatusCode)
                return false;
            using var json = JsonDocument.Parse(await response.Content.ReadAsStringAsync(token).ConfigureAwait(false));
            return json.RootElement.GetProperty("CaughtUp").GetBoolean();
        }
        catch (Exception e) when (e is HttpRequestException or TaskCanceledException or JsonException && !token.IsCancellationRequested)
        {
            return false;
        }
    }

    /// <summary>
    /// Sends a cluster command to the leader at <paramref name="leaderUrl"/> (<c>POST /rachis/send</c>), which appends it
    /// through Raft; returns the Raft index it was committed at. Not reached, or refused (no longer the leader, no
    /// majority, lost the leadership meanwhile — it may yet commit): 503 <c>NoLeaderException</c>.
    /// </summary>
    public async Task<long> SendAsync(string leaderUrl, byte[] command, CancellationToken token)
    {
        HttpResponseMessage response;
        try
        {
            response = await http.PostAsync($"{leaderUrl}/rachis/send", new ByteArrayContent(command), token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is HttpRequestException or TaskCanceledException && !token.IsCancellationRequested)
        {
            throw new NotLeaderException(null, $"The leader ({leaderUrl}) cannot be reached: {e.Message}");
        }
        using (response)
        {
            string body = await response.Content.ReadAsStringAsync(token).ConfigureAwait(false);
            if (!response.IsSuccessStatusCode)
                throw new NotLeaderException(null, $"The leader ({leaderUrl}) did not commit the command ({(int)response.StatusCode}): {body}");
            using var json = JsonDocument.Parse(body);
            return json.RootElement.GetProperty("RaftCommandIndex").GetInt64();
        }
    }
}
