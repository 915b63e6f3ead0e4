using Microsoft.Extensions.Primitives;

namespace RavenLite.Server.Http;

/// <summary>
/// Lenient reading of query strings and headers, as RavenDB does (docs/protocol.md §1.1, §1.3): one pair
/// of surrounding quotes is stripped, a value that does not parse counts as absent, and keys with
/// stray <c>?</c> in front (<c>&amp;?raft-request-id=</c>) are ignored with every unknown key.
/// </summary>
public static class RequestParsing
{
    /// <summary>A header value with one pair of surrounding quotes removed, or null when absent or empty.</summary>
    public static string? Header(HttpRequest request, string name)
    {
        StringValues v = request.Headers[name];
        if (v.Count == 0)
            return null;
        return Unquote(v[0]);
    }

    /// <summary>Strips one pair of surrounding double quotes; null for null/empty.</summary>
    public static string? Unquote(string? s)
    {
        if (string.IsNullOrEmpty(s))
            return null;
        if (s.Length >= 2 && s[0] == '"' && s[^1] == '"')
            s = s[1..^1];
        return s;
    }

    /// <summary>The first value of a query parameter, or null.</summary>
    public static string? Query(HttpRequest request, string name)
    {
        var v = request.Query[name];
        return v.Count == 0 ? null : v[0];
    }

    /// <summary>An integer query parameter: <paramref name="fallback"/> when absent; 400 naming it when not a whole number or below <paramref name="min"/>; at most <paramref name="max"/>.</summary>
    public static int QueryInt(HttpRequest request, string name, int fallback, int min = 0, int max = int.MaxValue)
    {
        string? s = Query(request, name);
        if (string.IsNullOrEmpty(s))
            return fallback;
        // Not a number, overflowing, or below the minimum (a negative start or page size) is a mistake worth naming;
        // more than the maximum is clamped to it, as RavenDB's clients ask for int.MaxValue to mean "all".
        if (!long.TryParse(s, NumberStyles.Integer, CultureInfo.InvariantCulture, out long n))
            throw new BadRequestException($"Query string parameter '{name}' must be a whole number, not '{(s.Length > 40 ? s[..40] + "..." : s)}'.");
        if (n < min)
            throw new BadRequestException($"Query string parameter '{name}' is {n}; it must be at least {min}.");
        return (int)Math.Min(n, max);
    }

    /// <summary>
    /// A 64-bit integer query parameter (quotes allowed), or null when absent or empty; 400 naming it when it is not a
    /// whole number, overflows, or is below <paramref name="min"/>.
    /// </summary>
    public static long? QueryLong(HttpRequest request, string name, long min = long.MinValue)
    {
        string? s = Query(request, name);
        if (string.IsNullOrEmpty(s))
            return null;
        if (!long.TryParse(Unquote(s), NumberStyles.Integer, CultureInfo.InvariantCulture, out long n))
            throw new BadRequestException($"Query string parameter '{name}' must be a whole number, not '{(s.Length > 40 ? s[..40] + "..." : s)}'.");
        if (n < min)
            throw new BadRequestException($"Query string parameter '{name}' is {n}; it must be at least {min}.");
        return n;
    }

    /// <summary>A query parameter that must be present and non-empty; 400 naming it otherwise.</summary>
    public static string Required(HttpRequest request, string name) =>
        Query(request, name) is { Length: > 0 } s ? s : throw new BadRequestException($"Query string parameter '{name}' is required.");
}
