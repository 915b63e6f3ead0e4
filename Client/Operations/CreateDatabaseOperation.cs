using System.Text.Json.Nodes;
using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary>
/// <c>PUT /admin/databases?name=..</c>: creates a database; <paramref name="encrypted"/> makes it an encrypted one (its
/// key distributed first: <see cref="DistributeSecretKeyOperation"/>; a secured server only). A database that exists
/// already is a <see cref="Exceptions.ConcurrencyException"/> (409).
/// </summary>
public sealed class CreateDatabaseOperation(string name, bool encrypted = false) : IServerOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) => new Command(name, encrypted);

    private sealed class Command(string name, bool encrypted) : RavenCommand<bool>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Put, "/admin/databases?name=" + Uri.EscapeDataString(name)) { Content = JsonContent(new JsonObject { ["DatabaseName"] = name, ["Encrypted"] = encrypted }) };

        public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(true);
    }
}

/// <summary><c>GET /admin/secrets/generate</c>: a new 256-bit database key, base64.</summary>
public sealed class GenerateSecretKeyOperation : IServerOperation<string>
{
    /// <inheritdoc />
    public RavenCommand<string> GetCommand(DocumentConventions conventions) => new Command();

    private sealed class Command : RavenCommand<string>
    {
        public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get, "/admin/secrets/generate");

        public override async Task<string> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) =>
            (await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false)).Trim();
    }
}

/// <summary><c>POST /admin/secrets/distribute?name=&amp;node=..</c>: stores <paramref name="key"/> as database <paramref name="name"/>'s key on each of <paramref name="nodes"/>.</summary>
public sealed class DistributeSecretKeyOperation(string name, string key, params string[] nodes) : IServerOperation<bool>
{
    /// <inheritdoc />
    public RavenCommand<bool> GetCommand(DocumentConventions conventions) => new Command(name, key, nodes);

    private sealed class Command(string name, string key, string[] nodes) : RavenCommand<bool>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Post, $"/admin/secrets/distribute?name={Uri.EscapeDataString(name)}{string.Concat(nodes.Select(n => "&node=" + Uri.EscapeDataString(n)))}")
            {
                Content = new StringContent(key, System.Text.Encoding.UTF8, "text/plain"),
            };

        public override Task<bool> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken) => Task.FromResult(true);
    }
}
