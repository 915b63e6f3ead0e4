using Microsoft.AspNetCore.Routing.Patterns;
using Microsoft.OpenApi;
using RavenLite.Server.Security;

namespace RavenLite.Server.Hosting;

/// <summary>
/// The OpenAPI document of the HTTP API at <c>GET /openapi/v1.json</c> (Microsoft.AspNetCore.OpenApi). The endpoints
/// are request delegates (RavenDB's protocol is read from the raw request, not bound to parameters), which the
/// generator does not describe, so a document transformer adds every routed endpoint the app has — path, methods,
/// route parameters — from the app's endpoint data source: the document lists exactly the routes that exist.
/// Request and response shapes are in docs/http-api.md.
/// </summary>
public static class OpenApiDocument
{
    /// <summary>Registers the document.</summary>
    public static void AddServices(IServiceCollection services) => services.AddOpenApi("v1", o =>
    {
        o.AddDocumentTransformer((document, context, _) =>
        {
            document.Info = new OpenApiInfo { Title = "RavenLite HTTP API", Version = "v1", Description = "RavenDB-compatible HTTP API of RavenLite; shapes in docs/http-api.md." };
            document.Paths ??= [];
            foreach (var (path, methods, parameters, name) in Routes(context.ApplicationServices.GetRequiredService<EndpointDataSource>()))
            {
                if (!document.Paths.TryGetValue(path, out var item))
                    document.Paths[path] = item = new OpenApiPathItem();
                var concrete = (OpenApiPathItem)item;
                foreach (string method in methods)
                {
                    var operation = new OpenApiOperation
                    {
                        Summary = name,
                        Parameters = parameters.Select(p => (IOpenApiParameter)new OpenApiParameter { Name = p, In = ParameterLocation.Path, Required = true, Schema = new OpenApiSchema { Type = JsonSchemaType.String } }).ToList(),
                        Responses = new OpenApiResponses { ["200"] = new OpenApiResponse { Description = "See docs/http-api.md" } },
                    };
                    concrete.AddOperation(new HttpMethod(method), operation);
                }
            }
            return Task.CompletedTask;
        });
    });

    /// <summary>Maps <c>GET /openapi/v1.json</c>.</summary>
    public static void Map(WebApplication app) => app.MapOpenApi("/openapi/{documentName}.json").Requires(Access.ValidUser);

    /// <summary>Every routed endpoint with HTTP methods: its OpenAPI path (catch-alls as plain parameters), methods, path parameters and name.</summary>
    public static IEnumerable<(string Path, IReadOnlyList<string> Methods, IReadOnlyList<string> Parameters, string? Name)> Routes(EndpointDataSource source)
    {
        foreach (var endpoint in source.Endpoints.OfType<RouteEndpoint>())
        {
            // Health checks and the metrics endpoint take any method: documented as GET. The fallback (unknown routes) is not a route.
            IReadOnlyList<string> methods = endpoint.Metadata.GetMetadata<IHttpMethodMetadata>()?.HttpMethods is { Count: > 0 } m ? m : ["GET"];
            if (endpoint.Order == int.MaxValue || endpoint.RoutePattern.RawText is not { } raw || raw.StartsWith("/openapi", StringComparison.Ordinal))
                continue;
            var parameters = endpoint.RoutePattern.Parameters.Select(p => p.Name).ToList();
            string path = "/" + string.Join("/", endpoint.RoutePattern.PathSegments.Select(s => string.Concat(s.Parts.Select(part => part switch
            {
                RoutePatternLiteralPart l => l.Content,
                RoutePatternParameterPart p => "{" + p.Name + "}",
                RoutePatternSeparatorPart sep => sep.Content,
                _ => "",
            }))));
            yield return (path, methods, parameters, endpoint.DisplayName);
        }
    }
}
