namespace RavenLite.Server.Http;

/// <summary>The tag of the server answering a request (its <see cref="Configuration.ServerOptions.NodeTag"/>), for answers that name the node.</summary>
public static class NodeTag
{
    public static string Of(HttpContext context) => context.RequestServices.GetRequiredService<Configuration.ServerOptions>().NodeTag;
}
