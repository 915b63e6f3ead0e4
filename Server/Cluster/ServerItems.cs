using System.Text.Json.Nodes;
using RavenLite.Server.Configuration;
using RavenLite.Server.Security;

namespace RavenLite.Server.Cluster;

/// <summary>
/// The server-wide state every node of the cluster keeps alike (docs/cluster.md "Server-wide state"): the registered
/// client certificates and the server's client configuration. A change goes through Raft as a
/// <see cref="ClusterCommands.PutServerItem"/> from whichever node was asked; every node then brings its own copy — the
/// certificate registry in its system storage, <c>server.json</c> — in line with the cluster's items, whenever it
/// applies a command (and once it has committed its own change, before answering). Level-triggered: a node that was
/// down catches up from the items, whatever it missed.
/// </summary>
public sealed class ServerItems : IDisposable
{
    /// <summary>Items <c>certificates/{THUMBPRINT}</c>: a <see cref="CertificateDefinition"/> as JSON.</summary>
    public const string CertificatePrefix = "certificates/";

    /// <summary>The item holding the server's client configuration (RavenDB's <c>ClientConfiguration</c>).</summary>
    public const string ClientConfigurationKey = "configuration/client";

    private readonly ClusterNode _node;
    private readonly ServerClientConfiguration _client;
    private readonly CertificateRegistry? _certificates;
    private readonly ILogger<ServerItems> _logger;
    private readonly SemaphoreSlim _gate = new(1, 1);
    private readonly Dictionary<string, long> _synced = new(StringComparer.Ordinal); // key → index brought in line here

    public ServerItems(ClusterNode node, ServerClientConfiguration client, ServerOptions options, IServiceProvider services, ILogger<ServerItems> logger)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(services);
        _node = node;
        _client = client;
        _certificates = options.Security.Secured ? services.GetRequiredService<CertificateRegistry>() : null;
        _logger = logger;
        node.Changed += () => _ = Task.Run(SyncInBackgroundAsync);
    }

    /// <summary>Registers (or replaces) a client certificate on every node; returns the Raft index.</summary>
    public Task<long> PutCertificateAsync(CertificateDefinition definition, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(definition);
        return SubmitAsync(CertificatePrefix + definition.Thumbprint, JsonSerializer.Serialize(definition), token);
    }

    /// <summary>Removes a client certificate's registration from every node; returns the Raft index.</summary>
    public Task<long> DeleteCertificateAsync(string thumbprint, CancellationToken token) =>
        SubmitAsync(CertificatePrefix + SecurityOptions.NormalizeThumbprint(thumbprint), null, token);

    /// <summary>Sets the server-wide client configuration on every node; returns the Raft index.</summary>
    public Task<long> PutClientConfigurationAsync(JsonObject configuration, CancellationToken token)
    {
        ArgumentNullException.ThrowIfNull(configuration);
        return SubmitAsync(ClientConfigurationKey, configuration.ToJsonString(), token);
    }

    private async Task<long> SubmitAsync(string key, string? json, CancellationToken token)
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

    /// <summary>Brings this node's certificate registry and client configuration in line with the cluster's items.</summary>
    public async Task SyncAsync(CancellationToken token)
    {
        await _gate.WaitAsync(token).ConfigureAwait(false);
        try
        {
            foreach (var item in _node.Read(s => s.ServerItems("")))
            {
                if (_synced.GetValueOrDefault(item.Key) == item.Index)
                    continue;
                if (item.Key.StartsWith(CertificatePrefix, StringComparison.Ordinal))
                    SyncCertificate(item.Key[CertificatePrefix.Length..], item.Json);
                else if (item.Key == ClientConfigurationKey && item.Json != null && _client.Client?.ToJsonString() != item.Json)
                    _client.Set(JsonNode.Parse(item.Json) as JsonObject ?? throw new JsonException("The cluster's client configuration is not a JSON object."));
                _synced[item.Key] = item.Index;
            }
        }
        finally
        {
            _gate.Release();
        }
    }

    private void SyncCertificate(string thumbprint, string? json)
    {
        if (_certificates == null)
            return; // an unsecured node has no registry (a secured cluster is secured on every node)
        var registered = _certificates.Registered(thumbprint);
        if (json == null)
        {
            if (registered != null)
                _certificates.Delete(thumbprint);
            return;
        }
        if (registered == null || JsonSerializer.Serialize(registered) != json)
            _certificates.Put(JsonSerializer.Deserialize<CertificateDefinition>(json)!);
    }

    public void Dispose() => _gate.Dispose();
}
