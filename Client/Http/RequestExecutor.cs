using System.Net;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using System.Text.Json;
using RavenLite.Client.Exceptions;

namespace RavenLite.Client.Http;

/// <summary>
/// Sends commands to the server over one pooled <see cref="HttpClient"/>, and maps error answers
/// (docs/protocol.md §9: JSON <c>{Url, Type, Message, Error}</c>, 503 + <c>Database-Missing</c>) to typed
/// exceptions. Thread-safe; one per <see cref="DocumentStore"/>.
/// </summary>
public sealed class RequestExecutor : IDisposable
{
    private readonly HttpClient _http;
    private readonly DocumentConventions? _conventions;
    private string _clientConfigurationEtag = "0";
    private (int MaxRequests, char Separator)? _originalConventions;

    internal RequestExecutor(Uri url, TimeSpan timeout, DocumentConventions? conventions = null, X509Certificate2? certificate = null, RemoteCertificateValidationCallback? serverValidation = null)
    {
        _conventions = conventions;
        Certificate = certificate;
        ServerValidation = serverValidation;
        var handler = new SocketsHttpHandler
        {
            PooledConnectionLifetime = TimeSpan.FromMinutes(5),
            AutomaticDecompression = DecompressionMethods.GZip | DecompressionMethods.Deflate,
        };
        if (certificate != null)
            handler.SslOptions.ClientCertificates = [certificate];
        if (serverValidation != null)
            handler.SslOptions.RemoteCertificateValidationCallback = serverValidation;
        _http = new HttpClient(handler) { BaseAddress = url, Timeout = timeout };
        _http.DefaultRequestHeaders.Add("Raven-Client-Version", "7.2.0");
    }

    /// <summary>Base URL of the server.</summary>
    public Uri Url => _http.BaseAddress!;

    internal HttpClient Http => _http;

    /// <summary>The client certificate requests are sent with (null: none).</summary>
    internal X509Certificate2? Certificate { get; }

    /// <summary>The server certificate check (null: the system's).</summary>
    internal RemoteCertificateValidationCallback? ServerValidation { get; }

    /// <summary>Sends <paramref name="command"/> and returns its parsed answer.</summary>
    /// <exception cref="RavenException">the server answered with an error (a typed subclass where the server's Type is known).</exception>
    public async Task<TResult> ExecuteAsync<TResult>(RavenCommand<TResult> command, string? database, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(command);
        using var request = command.CreateRequest(database);
        if (_conventions != null)
            request.Headers.TryAddWithoutValidation("Client-Configuration-Etag", Volatile.Read(ref _clientConfigurationEtag));
        HttpResponseMessage response;
        try
        {
            response = await _http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, cancellationToken).ConfigureAwait(false);
        }
        catch (HttpRequestException e)
        {
            throw new RavenException($"Could not reach the RavenLite server at {Url}: {e.Message}", e);
        }
        int status = (int)response.StatusCode;
        if (database != null && response.Headers.Contains("Refresh-Client-Configuration"))
            await RefreshClientConfigurationAsync(database, cancellationToken).ConfigureAwait(false);
        if (command.KeepsResponse && status is >= 200 and < 300)
            return await command.ParseResponseAsync(response, cancellationToken).ConfigureAwait(false); // the result disposes it
        using (response)
        {
            if (status is >= 200 and < 300 || command.IsExpectedStatus(status))
                return await command.ParseResponseAsync(response, cancellationToken).ConfigureAwait(false);
            throw await ToExceptionAsync(response, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// Fetches the database's client configuration (<c>GET /databases/{db}/configuration/client</c>) after an answer
    /// said it changed, and applies it to the conventions: <c>MaxNumberOfRequestsPerSession</c> and
    /// <c>IdentityPartsSeparator</c>; a disabled or removed configuration restores the values the store started with.
    /// </summary>
    private async Task RefreshClientConfigurationAsync(string database, CancellationToken cancellationToken)
    {
        if (_conventions == null)
            return;
        using var response = await _http.GetAsync($"/databases/{Uri.EscapeDataString(database)}/configuration/client", cancellationToken).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
            return;
        using var doc = JsonDocument.Parse(await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false));
        var root = doc.RootElement;
        lock (_conventions)
        {
            _originalConventions ??= (_conventions.MaxNumberOfRequestsPerSession, _conventions.IdentityPartsSeparator);
            var configuration = root.TryGetProperty("Configuration", out var c) ? c : default;
            bool active = configuration.ValueKind == JsonValueKind.Object && !(configuration.TryGetProperty("Disabled", out var d) && d.ValueKind == JsonValueKind.True);
            var (maxRequests, separator) = _originalConventions.Value;
            if (active && configuration.TryGetProperty("MaxNumberOfRequestsPerSession", out var m) && m.ValueKind == JsonValueKind.Number)
                maxRequests = m.GetInt32();
            if (active && configuration.TryGetProperty("IdentityPartsSeparator", out var sep) && sep.GetString() is { Length: 1 } text)
                separator = text[0];
            _conventions.MaxNumberOfRequestsPerSession = maxRequests;
            _conventions.IdentityPartsSeparator = separator;
            if (root.TryGetProperty("Etag", out var etag))
                Volatile.Write(ref _clientConfigurationEtag, etag.GetRawText());
        }
    }

    /// <summary>Turns an error answer into the matching exception type.</summary>
    internal static async Task<RavenException> ToExceptionAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        int status = (int)response.StatusCode;
        string body = await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false);
        string? type = null, message = null, url = null, property = null, problematic = null;
        try
        {
            using var doc = JsonDocument.Parse(body);
            if (doc.RootElement.ValueKind == JsonValueKind.Object)
            {
                type = doc.RootElement.TryGetProperty("Type", out var t) ? t.GetString() : null;
                message = doc.RootElement.TryGetProperty("Message", out var m) ? m.GetString() : null;
                url = doc.RootElement.TryGetProperty(nameof(Url), out var u) ? u.GetString() : null;
                property = doc.RootElement.TryGetProperty("IndexDefinitionProperty", out var ip) ? ip.GetString() : null;
                problematic = doc.RootElement.TryGetProperty("ProblematicText", out var pt) ? pt.GetString() : null;
            }
        }
        catch (JsonException)
        {
            // Not a JSON error: keep the raw text as the message.
        }
        message ??= body.Length > 0 ? body : $"HTTP {status} {response.ReasonPhrase}";
        if (status == 503 && response.Headers.TryGetValues("Database-Missing", out var missing))
        {
            return new DatabaseDoesNotExistException($"Database '{string.Join(",", missing)}' does not exist. {message}")
            { StatusCode = status, ServerType = type, Url = url };
        }
        string shortType = type?[(type.LastIndexOf('.') + 1)..] ?? "";
        return shortType switch
        {
            "DocumentConflictException" => new DocumentConflictException(message) { StatusCode = status, ServerType = type, Url = url },
            "RavenTimeoutException" => new RavenTimeoutException(message) { StatusCode = status, ServerType = type, Url = url },
            "ClusterTransactionConcurrencyException" => new ClusterTransactionConcurrencyException(message) { StatusCode = status, ServerType = type, Url = url },
            "ConcurrencyException" or "ConflictException" => new ConcurrencyException(message) { StatusCode = status, ServerType = type, Url = url },
            "DatabaseDoesNotExistException" => new DatabaseDoesNotExistException(message) { StatusCode = status, ServerType = type, Url = url },
            "IndexDoesNotExistException" => new IndexDoesNotExistException(message) { StatusCode = status, ServerType = type, Url = url },
            "DocumentDoesNotExistException" => new DocumentDoesNotExistException(message) { StatusCode = status, ServerType = type, Url = url },
            "IndexCompilationException" => new IndexCompilationException(message)
            { StatusCode = status, ServerType = type, Url = url, IndexDefinitionProperty = property, ProblematicText = problematic },
            "InvalidQueryException" => new InvalidQueryException(message) { StatusCode = status, ServerType = type, Url = url },
            "BadRequestException" or "RouteNotFoundException" => new BadRequestException(message) { StatusCode = status, ServerType = type, Url = url },
            "BulkInsertAbortedException" => new BulkInsertAbortedException(message) { StatusCode = status, ServerType = type, Url = url },
            "AuthorizationException" => new AuthorizationException(message) { StatusCode = status, ServerType = type, Url = url },
            "AuthenticationException" => new AuthenticationException(message) { StatusCode = status, ServerType = type, Url = url },
            _ when status == 403 => new AuthorizationException(message) { StatusCode = status, ServerType = type, Url = url },
            _ when status == 401 => new AuthenticationException(message) { StatusCode = status, ServerType = type, Url = url },
            _ when status == 409 => new ConcurrencyException(message) { StatusCode = status, ServerType = type, Url = url },
            _ when status == 400 => new BadRequestException(message) { StatusCode = status, ServerType = type, Url = url },
            _ => new RavenException($"{message} (HTTP {status}{(type != null ? ", " + type : "")})") { StatusCode = status, ServerType = type, Url = url },
        };
    }

    /// <summary>Closes the connection pool.</summary>
    public void Dispose() => _http.Dispose();
}
