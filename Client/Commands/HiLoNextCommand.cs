using System.Globalization;
using RavenLite.Client.Http;

namespace RavenLite.Client.Commands;

/// <summary><c>GET /databases/{db}/hilo/next?tag=..</c> (docs/protocol.md §10.1): reserves a range of ids for a collection tag.</summary>
public sealed class HiLoNextCommand(string tag, long lastBatchSize, DateTime? lastRangeAt, char separator, long lastMax) : RavenCommand<HiLoRange>
{
    /// <inheritdoc />
    public override HttpRequestMessage CreateRequest(string? database)
    {
        string url = string.Create(CultureInfo.InvariantCulture,
            $"{DatabasePath(database)}/hilo/next?tag={Uri.EscapeDataString(tag)}&lastBatchSize={lastBatchSize}&lastRangeAt={(lastRangeAt is { } at ? Uri.EscapeDataString(at.ToString("o", CultureInfo.InvariantCulture)) : "")}&identityPartsSeparator={Uri.EscapeDataString(separator.ToString())}&lastMax={lastMax}");
        return new HttpRequestMessage(HttpMethod.Get, url);
    }

    /// <inheritdoc />
    public override async Task<HiLoRange> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
    {
        var json = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
        return new HiLoRange(
            (string?)json["Prefix"] ?? tag + separator,
            (long?)json["Low"] ?? throw new Exceptions.RavenException("hilo/next answered without Low."),
            (long?)json["High"] ?? throw new Exceptions.RavenException("hilo/next answered without High."),
            (long?)json["LastSize"] ?? 0,
            (string?)json["ServerTag"] ?? "A",
            DateTime.TryParse((string?)json["LastRangeAt"], CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal, out var at) ? at : DateTime.UtcNow);
    }
}

/// <summary>A reserved id range: ids <c>{Prefix}{n}-{ServerTag}</c> for n in [Low, High].</summary>
public sealed record HiLoRange(string Prefix, long Low, long High, long LastSize, string ServerTag, DateTime LastRangeAt);
