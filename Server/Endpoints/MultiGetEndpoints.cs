using Microsoft.AspNetCore.Routing.Template;
using RavenLite.Server.Databases;
using RavenLite.Server.Http;
using RavenLite.Server.Memory;
using RavenLite.Server.Security;

namespace RavenLite.Server.Endpoints;

/// <summary>
/// <c>POST /databases/{db}/multi_get</c> (the clients' lazy operations): <c>{Requests: [{Url, Query, Method,
/// Headers, Content}]}</c> answered in one round trip as <c>{Results: [{Result, StatusCode, Headers}]}</c>, in order.
/// Each request runs through the same endpoint (and error handling) it would reach on its own, in-process, with
/// its own headers (<c>If-None-Match</c> gives a 304 with no result), so every answer is exactly the one a single
/// request would get. Requests must name this database; streams and nested multi_gets are refused; at most
/// <see cref="MaxRequests"/> per call.
/// </summary>
public static class MultiGetEndpoints
{
    /// <summary>Requests one multi_get may carry.</summary>
    public const int MaxRequests = 1024;

    /// <summary>Maps the route.</summary>
    public static void Map(IEndpointRouteBuilder app) =>
        app.MapPost("/databases/{db}/multi_get", DatabaseRoute.Handle(Post)).Requires(Access.DatabaseRead);

    private sealed record Route(TemplateMatcher Matcher, IReadOnlyList<string> Methods, RequestDelegate Handler, Endpoint Endpoint);

    private static IReadOnlyList<Route>? _routes;

    private static IReadOnlyList<Route> Routes(IServiceProvider services) => _routes ??= services.GetRequiredService<EndpointDataSource>().Endpoints
        .OfType<RouteEndpoint>()
        .Where(e => e.RequestDelegate != null && e.RoutePattern.RawText != null)
        .Select(e => new Route(new TemplateMatcher(TemplateParser.Parse(e.RoutePattern.RawText!.TrimStart('/')), new RouteValueDictionary()),
            e.Metadata.GetMetadata<HttpMethodMetadata>()?.HttpMethods ?? [], e.RequestDelegate!, e))
        .ToList();

    private static async Task Post(HttpContext context, Database db)
    {
        using var doc = await RequestBody.ReadJsonAsync(context, "multi_get").ConfigureAwait(false);
        var root = doc.RootElement;
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("Requests", out var requests) || requests.ValueKind != JsonValueKind.Array)
            throw new BadRequestException("multi_get needs {\"Requests\": [{Url, Query, Method, Headers, Content}, ...]}.");
        int count = requests.GetArrayLength();
        if (count > MaxRequests)
            throw new BadRequestException($"multi_get carries at most {MaxRequests} requests; this one has {count}: send them in several calls.");
        string prefix = "/databases/" + db.Name + "/";
        var planned = new List<(string Method, string Path, string Query, JsonElement Headers, JsonElement Content)>(count);
        int i = 0;
        foreach (var r in requests.EnumerateArray())
        {
            if (r.ValueKind != JsonValueKind.Object || !r.TryGetProperty("Url", out var url) || url.ValueKind != JsonValueKind.String)
                throw new BadRequestException($"multi_get request {i} needs a string Url.");
            string path = url.GetString()!;
            if (!path.StartsWith(prefix, StringComparison.OrdinalIgnoreCase))
                throw new BadRequestException($"multi_get request {i} ('{path}') is not under {prefix}: each request must name this database.");
            string rest = path[prefix.Length..];
            if (rest.StartsWith("multi_get", StringComparison.OrdinalIgnoreCase) || rest.StartsWith("streams/", StringComparison.OrdinalIgnoreCase))
                throw new BadRequestException($"multi_get request {i} ('{path}'): streams and multi_get cannot run inside multi_get.");
            string method = r.TryGetProperty("Method", out var m) && m.ValueKind == JsonValueKind.String ? m.GetString()!.ToUpperInvariant() : "GET";
            string query = r.TryGetProperty("Query", out var q) && q.ValueKind == JsonValueKind.String ? q.GetString()! : "";
            var headers = r.TryGetProperty("Headers", out var h) && h.ValueKind == JsonValueKind.Object ? h : default;
            var content = r.TryGetProperty("Content", out var c) && c.ValueKind is not (JsonValueKind.Null or JsonValueKind.Undefined) ? c : default;
            planned.Add((method, path, query, headers, content));
            i++;
        }

        var logger = context.RequestServices.GetRequiredService<ILogger<ErrorHandlingMiddleware>>();
        var results = new List<(int Status, byte[] Body, IHeaderDictionary Headers)>(count);
        foreach (var (method, path, query, headers, content) in planned)
        {
            context.RequestAborted.ThrowIfCancellationRequested();
            results.Add(await RunOne(context, logger, method, path, query, headers, content).ConfigureAwait(false));
        }

        await JsonResponse.WriteAsync(context, 200, w =>
        {
            w.WriteStartObject();
            w.WriteStartArray("Results");
            foreach (var (status, body, headers) in results)
            {
                w.WriteStartObject();
                w.WritePropertyName("Result");
                if (body.Length == 0)
                    w.WriteNullValue();
                else
                    w.WriteRawValue(body, skipInputValidation: true);
                w.WriteNumber("StatusCode", status);
                w.WriteStartObject("Headers");
                foreach (var (k, v) in headers)
                {
                    if (k is "Content-Length" or "Content-Type" or "Raven-Server-Version")
                        continue;
                    // An ETag as the change vector itself: the clients' lazy conditional load reads this header as is
                    // (their other readers strip quotes when present).
                    string value = v.ToString();
                    w.WriteString(k, k.Equals("ETag", StringComparison.OrdinalIgnoreCase) && value.Length >= 2 && value[0] == '"' && value[^1] == '"' ? value[1..^1] : value);
                }
                w.WriteEndObject();
                w.WriteEndObject();
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }).ConfigureAwait(false);
    }

    /// <summary>Runs one inner request through its endpoint and the usual error handling; returns its status, JSON body and headers.</summary>
    private static async Task<(int, byte[], IHeaderDictionary)> RunOne(HttpContext outer, ILogger<ErrorHandlingMiddleware> logger, string method, string path, string query, JsonElement headers, JsonElement content)
    {
        var inner = new DefaultHttpContext { RequestServices = outer.RequestServices, User = outer.User };
        inner.RequestAborted = outer.RequestAborted;
        // Each inner request charges a memory lease of its own (a refused one answers 503 in its place), held until the
        // whole answer is sent.
        if (outer.RequestServices.GetService<MemoryBudget>() is { } budget)
        {
            var lease = new MemoryBudget.Lease(budget);
            inner.Items[typeof(MemoryBudget.Lease)] = lease;
            outer.Response.RegisterForDispose(lease);
        }
        var request = inner.Request;
        request.Method = method;
        request.Scheme = outer.Request.Scheme;
        request.Host = outer.Request.Host;
        request.Path = path;
        request.QueryString = query.Length == 0 ? QueryString.Empty : new QueryString(query.StartsWith('?') ? query : "?" + query);
        if (headers.ValueKind == JsonValueKind.Object)
            foreach (var h in headers.EnumerateObject())
                if (h.Value.ValueKind is JsonValueKind.String or JsonValueKind.Number)
                    request.Headers[h.Name] = h.Value.ValueKind == JsonValueKind.String ? h.Value.GetString() : h.Value.GetRawText();
        if (content.ValueKind != JsonValueKind.Undefined)
        {
            // Content is the request's JSON (the clients send the object itself; a string is taken as the body text).
            byte[] body = content.ValueKind == JsonValueKind.String ? Encoding.UTF8.GetBytes(content.GetString()!) : Encoding.UTF8.GetBytes(content.GetRawText());
            request.Body = new MemoryStream(body, writable: false);
            request.ContentLength = body.Length;
            request.ContentType = "application/json; charset=utf-8";
        }
        var responseBody = new MemoryStream();
        inner.Response.Body = responseBody;

        RequestDelegate handler = NotFound;
        foreach (var route in Routes(outer.RequestServices))
        {
            var values = new RouteValueDictionary();
            if (route.Methods.Count > 0 && !route.Methods.Contains(method, StringComparer.OrdinalIgnoreCase))
                continue;
            if (route.Matcher.TryMatch(path, values))
            {
                request.RouteValues = values;
                inner.SetEndpoint(route.Endpoint);
                handler = route.Handler;
                // On a secured server each inner request passes the same access rule as a request of its own.
                if (outer.RequestServices.GetService<Security.AccessPolicy>()?.Check(inner, route.Endpoint, values) is { } denial)
                    handler = c => Security.AccessPolicy.WriteAsync(c, denial);
                break;
            }
        }
        await new ErrorHandlingMiddleware(handler, logger).InvokeAsync(inner).ConfigureAwait(false);
        byte[] answer = responseBody.ToArray();
        RequestMemory.For(inner)?.Add(answer.Length);
        return (inner.Response.StatusCode, answer, inner.Response.Headers);
    }

    private static Task NotFound(HttpContext context) =>
        throw new BadRequestException($"There is no handler for {context.Request.Method} {context.Request.Path}.", RavenExceptionTypes.RouteNotFound);
}
