using System.Globalization;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Identity;

/// <summary><c>POST /databases/{db}/identity/next?name=</c>: the next value of an identity (the counter behind <c>users|</c> ids).</summary>
public sealed class NextIdentityForOperation(string name) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new IdentityCommand(db => $"{db}/identity/next?name={Uri.EscapeDataString(name)}", "NewIdentityValue");
}

/// <summary><c>POST /databases/{db}/identity/seed</c>: raises an identity to <paramref name="value"/> (or sets it when <paramref name="force"/>); answers its value.</summary>
public sealed class SeedIdentityForOperation(string name, long value, bool force = false) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) => new IdentityCommand(
        db => string.Create(CultureInfo.InvariantCulture, $"{db}/identity/seed?name={Uri.EscapeDataString(name)}&value={value}{(force ? "&force=true" : "")}"), "NewSeedValue");
}

/// <summary><c>GET /databases/{db}/debug/identities</c>: every identity and its value, keyed as the server lists them (<c>users|</c>).</summary>
public sealed class GetIdentitiesOperation : IMaintenanceOperation<IReadOnlyDictionary<string, long>>
{
    /// <inheritdoc />
    public RavenCommand<IReadOnlyDictionary<string, long>> GetCommand(DocumentConventions conventions) => new Command();

    private sealed class Command : RavenCommand<IReadOnlyDictionary<string, long>>
    {
        public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Get, DatabasePath(database) + "/debug/identities");

        public override async Task<IReadOnlyDictionary<string, long>> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            return json.ToDictionary(p => p.Key, p => (long?)p.Value ?? 0, StringComparer.Ordinal);
        }
    }
}

internal sealed class IdentityCommand(Func<string, string> path, string field) : RavenCommand<long>
{
    public override HttpRequestMessage CreateRequest(string? database) => new(HttpMethod.Post, path(DatabasePath(database)));

    public override async Task<long> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
        return (long?)json[field] ?? throw new Exceptions.RavenException($"The server answered without {field}.");
    }
}
