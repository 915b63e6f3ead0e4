using System.Security.Cryptography;

namespace RavenLite.Server.Http;

/// <summary>
/// Conditional GETs (docs/protocol.md §1.2, §4.1, §6): an answer that can be cached carries
/// <c>ETag: "&lt;tag&gt;"</c>, and a request whose <c>If-None-Match</c> names the same tag gets
/// <c>304</c> with no body. The official clients keep the answer per URL and replay it on 304; their
/// aggressive caching serves it without asking at all while it is young. A tag must change whenever
/// the answer would: a single document's tag is its change vector (what
/// <c>session.advanced.conditionalLoad</c> sends), other answers hash what they depend on.
/// </summary>
public static class HttpCaching
{
    /// <summary>
    /// Sets the ETag header to <paramref name="tag"/>; true when the request's <c>If-None-Match</c>
    /// (one pair of quotes stripped) equals it, so the caller answers <see cref="NotModifiedAsync"/>.
    /// </summary>
    public static bool Matches(HttpContext context, string tag)
    {
        context.Response.Headers.ETag = "\"" + tag + "\"";
        return RequestParsing.Header(context.Request, "If-None-Match") == tag;
    }

    /// <summary>304 with an empty body (the ETag header stays).</summary>
    public static Task NotModifiedAsync(HttpContext context) => JsonResponse.EmptyAsync(context, 304);

    /// <summary>A tag for an answer that depends on <paramref name="parts"/> (in order; null counts as its own value).</summary>
    public static string Tag(IEnumerable<string?> parts)
    {
        using var hash = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        Span<byte> separator = [0xFF];
        foreach (string? part in parts)
        {
            if (part == null)
                hash.AppendData([0xFE]);
            else
                hash.AppendData(Encoding.UTF8.GetBytes(part));
            hash.AppendData(separator);
        }
        Span<byte> digest = stackalloc byte[32];
        hash.GetHashAndReset(digest);
        return "H-" + Convert.ToHexString(digest[..16]);
    }
}
