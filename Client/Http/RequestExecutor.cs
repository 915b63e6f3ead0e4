using System.Net;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using System.Text.Json;
using RavenLite.Client.Exceptions;

namespace RavenLite.Client.Http;

/// <summary>
/// Sends commands to the servers over one pooled <see cref="HttpClient"/>, and maps error answers
/// (docs/protocol.md §9: JSON <c>{Url, Type, Message, Error}</c>, 503 + <c>Database-Missing</c>) to typed
/// exceptions. With a database in a cluster it fails over as RavenDB's clients do: it learns the database's group from
/// <c>GET /topology?name=</c> (when the store has several URLs, or when a server answers <c>Refresh-Topology</c>), sends
/// each request to the preferred node — for reads, per <see cref="DocumentConventions.ReadBalanceBehavior"/> — and
/// moves on to the next node when one cannot be reached or answers 503 (no leader, shutting down) or 410 (it holds no
/// instance of the database). Thread-safe; one per <see cref="DocumentStore"/>.
/// </summary>
public sealed class RequestExecutor : IDisposable
{
    private readonly HttpClient _http;
    private readonly DocumentConventions? _conventions;
    private readonly IReadOnlyList<Uri> _urls;
    private readonly NodeSelector _server;
    private readonly System.Collections.Concurrent.ConcurrentDictionary<string, NodeSelector> _databases = new(StringComparer.OrdinalIgnoreCase);
    private readonly NodeHealthChecks _health;
    private string _clientConfigurationEtag = "0";
    private (int MaxRequests, char Separator, ReadBalanceBehavior ReadBalance)? _originalConventions;

    internal RequestExecutor(IReadOnlyList<Uri> urls, TimeSpan timeout, DocumentConventions? conventions = null, X509Certificate2? certificate = null, RemoteCertificateValidationCallback? serverValidation = null)
    {
        _conventions = conventions;
        _urls = urls;
        _server = new NodeSelector(urls);
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
        _http = new HttpClient(handler) { BaseAddress = urls[0], Timeout = timeout };
        _http.DefaultRequestHeaders.Add("Raven-Client-Version", "7.2.0");
        _health = new NodeHealthChecks(_http);
    }

    internal RequestExecutor(Uri url, TimeSpan timeout, DocumentConventions? conventions = null, X509Certificate2? certificate = null, RemoteCertificateValidationCallback? serverValidation = null)
        : this([url], timeout, conventions, certificate, serverValidation)
    {
    }

    /// <summary>Base URL of the first server (what streaming operations — bulk insert, changes — use).</summary>
    public Uri Url => _http.BaseAddress!;

    internal HttpClient Http => _http;

    /// <summary>The client certificate requests are sent with (null: none).</summary>
    internal X509Certificate2? Certificate { get; }

    /// <summary>The server certificate check (null: the system's).</summary>
    internal RemoteCertificateValidationCallback? ServerValidation { get; }

    /// <summary>The nodes requests to <paramref name="database"/> may go to, in topology order (the store's URLs until a topology was read).</summary>
    public IReadOnlyList<Uri> NodesOf(string database) => _databases.TryGetValue(database, out var s) ? s.Nodes : _urls;

    /// <summary>Sends <paramref name="command"/> (failing over to the next node as needed) and returns its parsed answer.</summary>
    /// <exception cref="RavenException">the server answered with an error (a typed subclass where the server's Type is known), or no node answered.</exception>
    public async Task<TResult> ExecuteAsync<TResult>(RavenCommand<TResult> command, string? database, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(command);
        var selector = await SelectorAsync(database, cancellationToken).ConfigureAwait(false);
        bool read = command.IsReadRequest;
        var behavior = _conventions?.ReadBalanceBehavior ?? ReadBalanceBehavior.None;
        HttpResponseMessage? response = null;
        if (selector.ShouldRace(read, behavior))
            response = await RaceAsync(command, database, selector, cancellationToken).ConfigureAwait(false);
        Exception? failure = null;
        var order = selector.Order(read, behavior);
        foreach (var node in order)
        {
            if (response != null)
                break;
            try
            {
                response = await SendAsync(command, database, node, selector, cancellationToken).ConfigureAwait(false);
            }
            catch (Exception e) when (e is HttpRequestException || (e is TaskCanceledException && !cancellationToken.IsCancellationRequested))
            {
                failure = e;
                selector.Failed(node);
                _health.Watch(database, selector, node);
                continue;
            }
            if (Unavailable(response))
            {
                failure = await ToExceptionAsync(response, cancellationToken).ConfigureAwait(false);
                response.Dispose();
                response = null;
                selector.Failed(node);
                _health.Watch(database, selector, node);
            }
        }
        if (response == null)
        {
            if (failure is RavenException answered)
                throw answered;
            throw new RavenException(order.Count == 1
                ? $"Could not reach the RavenLite server at {order[0]}: {failure?.Message}"
                : $"Could not reach any node of database '{database}' ({string.Join(", ", order)}): {failure?.Message}", failure!);
        }
        int status = (int)response.StatusCode;
        if (database != null && response.Headers.Contains("Refresh-Client-Configuration"))
            await RefreshClientConfigurationAsync(database, cancellationToken).ConfigureAwait(false);
        if (database != null && response.Headers.Contains("Refresh-Topology"))
            await RefreshTopologyAsync(database, selector, cancellationToken).ConfigureAwait(false);
        if (command.KeepsResponse && status is >= 200 and < 300)
            return await command.ParseResponseAsync(response, cancellationToken).ConfigureAwait(false); // the result disposes it
        using (response)
        {
            if (status is >= 200 and < 300 || command.IsExpectedStatus(status))
                return await command.ParseResponseAsync(response, cancellationToken).ConfigureAwait(false);
            throw await ToExceptionAsync(response, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>503 other than "no such database", or 410 (this node holds no instance of the database): try another node.</summary>
    private static bool Unavailable(HttpResponseMessage response) =>
        response.StatusCode == HttpStatusCode.Gone
        || (response.StatusCode == HttpStatusCode.ServiceUnavailable && !response.Headers.Contains("Database-Missing"));

    private async Task<HttpResponseMessage> SendAsync<TResult>(RavenCommand<TResult> command, string? database, Uri node, NodeSelector selector, CancellationToken cancellationToken)
    {
        using var request = command.CreateRequest(database);
        if (request.RequestUri is { IsAbsoluteUri: false } relative)
            request.RequestUri = new Uri(node, relative);
        if (_conventions != null)
            request.Headers.TryAddWithoutValidation("Client-Configuration-Etag", Volatile.Read(ref _clientConfigurationEtag));
        if (database != null)
            request.Headers.TryAddWithoutValidation("Topology-Etag", Math.Max(selector.Etag, 0).ToString(System.Globalization.CultureInfo.InvariantCulture));
        return await _http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Sends a read to every node at once (RavenDB's FastestNode): the first successful answer is used and its node
    /// becomes the fastest; the others are dropped. Null when none succeeded (the usual order is tried then).
    /// </summary>
    private async Task<HttpResponseMessage?> RaceAsync<TResult>(RavenCommand<TResult> command, string? database, NodeSelector selector, CancellationToken cancellationToken)
    {
        var pending = selector.Nodes.Select(async node => (Node: node, Response: await SendAsync(command, database, node, selector, cancellationToken).ConfigureAwait(false))).ToList();
        HttpResponseMessage? winner = null;
        while (pending.Count > 0)
        {
            var done = await Task.WhenAny(pending).ConfigureAwait(false);
            pending.Remove(done);
            if (done.IsCompletedSuccessfully && winner == null && done.Result.Response.IsSuccessStatusCode)
            {
                winner = done.Result.Response;
                selector.Fastest(done.Result.Node);
                _ = DisposeAllAsync(pending);
                return winner;
            }
            if (done.IsCompletedSuccessfully)
                done.Result.Response.Dispose();
        }
        return null;
    }

    private static async Task DisposeAllAsync(List<Task<(Uri Node, HttpResponseMessage Response)>> pending)
    {
        foreach (var task in pending)
        {
            try
            {
                (await task.ConfigureAwait(false)).Response.Dispose();
            }
            catch (Exception e) when (e is HttpRequestException or TaskCanceledException)
            {
                // a slower node that failed: nothing to dispose
            }
        }
    }

    /// <summary>The nodes of <paramref name="database"/> (null: the store's URLs): read from the servers the first time when the store has several URLs.</summary>
    private async Task<NodeSelector> SelectorAsync(string? database, CancellationToken cancellationToken)
    {
        if (database == null)
            return _server;
        if (_databases.TryGetValue(database, out var selector))
            return selector;
        selector = _databases.GetOrAdd(database, _ => new NodeSelector(_urls));
        if (_urls.Count > 1)
            await RefreshTopologyAsync(database, selector, cancellationToken).ConfigureAwait(false);
        return selector;
    }

    /// <summary>
    /// Reads the database's topology (<c>GET /topology?name=</c>: its nodes, members first, and its etag) from the first
    /// node that answers; none answering leaves the nodes as they were.
    /// </summary>
    private async Task RefreshTopologyAsync(string database, NodeSelector selector, CancellationToken cancellationToken)
    {
        foreach (var node in selector.Nodes.Concat(_urls).Distinct())
        {
            try
            {
                using var response = await _http.GetAsync(new Uri(node, "/topology?name=" + Uri.EscapeDataString(database)), cancellationToken).ConfigureAwait(false);
                if (!response.IsSuccessStatusCode)
                    continue;
                using var doc = JsonDocument.Parse(await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false));
                var nodes = doc.RootElement.GetProperty("Nodes").EnumerateArray()
                    .Select(n => n.GetProperty(nameof(Url)).GetString())
                    .Where(u => Uri.TryCreate(u, UriKind.Absolute, out _))
                    .Select(u => new Uri(u!)).ToList();
                selector.Update(nodes, doc.RootElement.TryGetProperty("Etag", out var etag) ? etag.GetInt64() : 0);
                return;
            }
            catch (Exception e) when (e is HttpRequestException or JsonException or KeyNotFoundException or InvalidOperationException
                || (e is TaskCanceledException && !cancellationToken.IsCancellationRequested))
            {
                // this node cannot tell: ask the next
            }
        }
    }

    /// <summary>
    /// Fetches the database's client configuration (<c>GET /databases/{db}/configuration/client</c>) after an answer
    /// said it changed, and applies it to the conventions: <c>MaxNumberOfRequestsPerSession</c> and
    /// <c>IdentityPartsSeparator</c> and <c>ReadBalanceBehavior</c>; a disabled or removed configuration restores the values the store started with.
    /// </summary>
    private async Task RefreshClientConfigurationAsync(string database, CancellationToken cancellationToken)
    {
        if (_conventions == null)
            return;
        using var response = await _http.GetAsync(new Uri(NodesOf(database)[0], $"/databases/{Uri.EscapeDataString(database)}/configuration/client"), cancellationToken).ConfigureAwait(false);
        if (!response.IsSuccessStatusCode)
            return;
        using var doc = JsonDocument.Parse(await response.Content.ReadAsStringAsync(cancellationToken).ConfigureAwait(false));
        var root = doc.RootElement;
        lock (_conventions)
        {
            _originalConventions ??= (_conventions.MaxNumberOfRequestsPerSession, _conventions.IdentityPartsSeparator, _conventions.ReadBalanceBehavior);
            var configuration = root.TryGetProperty("Configuration", out var c) ? c : default;
            bool active = configuration.ValueKind == JsonValueKind.Object && !(configuration.TryGetProperty("Disabled", out var d) && d.ValueKind == JsonValueKind.True);
            var (maxRequests, separator, readBalance) = _originalConventions.Value;
            if (active && configuration.TryGetProperty("MaxNumberOfRequestsPerSession", out var m) && m.ValueKind == JsonValueKind.Number)
                maxRequests = m.GetInt32();
            if (active && configuration.TryGetProperty("IdentityPartsSeparator", out var sep) && sep.GetString() is { Length: 1 } text)
                separator = text[0];
            if (active && configuration.TryGetProperty("ReadBalanceBehavior", out var rb) && Enum.TryParse<ReadBalanceBehavior>(rb.GetString(), out var behavior))
                readBalance = behavior;
            _conventions.MaxNumberOfRequestsPerSession = maxRequests;
            _conventions.ReadBalanceBehavior = readBalance;
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

    /// <summary>Ends the node checks and closes the connection pool.</summary>
    public void Dispose()
    {
        _health.Dispose();
        _http.Dispose();
    }
}
