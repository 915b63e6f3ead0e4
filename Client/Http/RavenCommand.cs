using System.Text.Json.Nodes;

namespace RavenLite.Client.Http;

/// <summary>
/// One server request and how to read its answer (docs/conventions.md §10: one command class per server
/// operation). <see cref="CreateRequest"/> builds the message against a base URL; <see cref="ParseResponseAsync"/>
/// turns a successful answer into <typeparamref name="TResult"/>. Error answers never reach it:
/// <see cref="RequestExecutor"/> maps them to typed exceptions.
/// </summary>
/// <typeparam name="TResult">What the command returns.</typeparam>
public abstract class RavenCommand<TResult>
{
    /// <summary>Builds the HTTP request. <paramref name="database"/> is the store's database (null for server-wide commands).</summary>
    public abstract HttpRequestMessage CreateRequest(string? database);

    /// <summary>Reads a successful answer.</summary>
    public abstract Task<TResult> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken);

    /// <summary>
    /// True when a successful answer is streamed by the result (an attachment's content): the result owns the response
    /// and disposes it; otherwise the executor disposes it once <see cref="ParseResponseAsync"/> returns.
    /// </summary>
    public virtual bool KeepsResponse => false;

    /// <summary>True for a request that only reads (GET, and queries): it may go to any node of the database's group (<see cref="ReadBalanceBehavior"/>).</summary>
    public virtual bool IsReadRequest => false;

    /// <summary>Statuses that are answers rather than errors (for example 404 for a missing document). Default: none.</summary>
    public virtual bool IsExpectedStatus(int status) => false;

    /// <summary>Reads a JSON object body, or throws <see cref="Exceptions.RavenException"/> when it is not one.</summary>
    protected static async Task<JsonObject> ReadObjectAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(response);
        await using var s = await response.Content.ReadAsStreamAsync(cancellationToken).ConfigureAwait(false);
        return await JsonNode.ParseAsync(s, cancellationToken: cancellationToken).ConfigureAwait(false) as JsonObject
            ?? throw new Exceptions.RavenException($"The server answered {(int)response.StatusCode} without a JSON object body.");
    }

    /// <summary>The database path prefix, or an exception naming what is missing.</summary>
    protected static string DatabasePath(string? database) =>
        "/databases/" + Uri.EscapeDataString(database ?? throw new InvalidOperationException("This operation needs a database: set DocumentStore.Database or pass one."));

    /// <summary>A JSON request body (UTF-8, application/json).</summary>
    protected static HttpContent JsonContent(JsonNode body)
    {
        ArgumentNullException.ThrowIfNull(body);
        var content = new ByteArrayContent(System.Text.Encoding.UTF8.GetBytes(body.ToJsonString()));
        content.Headers.ContentType = new System.Net.Http.Headers.MediaTypeHeaderValue("application/json");
        return content;
    }
}
