namespace RavenLite.Server.Http;

/// <summary>The database a request addresses: the name in <c>/databases/{db}/...</c> (unescaped), or null for any other path.</summary>
public static class RequestDatabase
{
    private const string Prefix = "/databases/";

    public static string? Of(HttpRequest request)
    {
        ArgumentNullException.ThrowIfNull(request);
        string? path = request.Path.Value;
        if (path == null || !path.StartsWith(Prefix, StringComparison.OrdinalIgnoreCase))
            return null;
        int end = path.IndexOf('/', Prefix.Length);
        return Uri.UnescapeDataString(end < 0 ? path[Prefix.Length..] : path[Prefix.Length..end]);
    }
}
