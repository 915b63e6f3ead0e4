using System.Text.Json.Nodes;
using RavenLite.Server.Configuration;

namespace RavenLite.Server.Cluster;

/// <summary>The server-wide client configuration as a cluster item (<see cref="ServerItems.ClientConfigurationKey"/>): written to this node's <c>server.json</c>.</summary>
public sealed class ClientConfigurationFollower(ServerClientConfiguration client) : IServerItemFollower
{
    public string Prefix => ServerItems.ClientConfigurationKey;

    public void Apply(string key, string? json)
    {
        if (json == null || client.Client?.ToJsonString() == json)
            return;
        client.Set(JsonNode.Parse(json) as JsonObject ?? throw new JsonException("The cluster's client configuration is not a JSON object."));
    }
}
