using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Expiration;

/// <summary>
/// When documents expire (<c>@expires</c>) or are refreshed (<c>@refresh</c>), kept by time so the background task
/// finds what is due without a scan (docs/format/documents.md "Expiration"): trees <c>Expires</c> and <c>Refresh</c>,
/// key = UTC ticks (int64, big endian) then the document key, empty value. <see cref="ExpirationExtension"/> keeps
/// them in step with every put and delete; the configurations are JSON in <c>State</c>.
/// </summary>
public static class ExpirationStore
{
    internal const string ExpiresTree = "Expires";
    internal const string RefreshTree = "Refresh";
    private static byte[] Key(long ticks, ReadOnlySpan<byte> docKey)
    {
        var key = new byte[8 + docKey.Length];
        BinaryPrimitives.WriteInt64BigEndian(key, ticks);
        docKey.CopyTo(key.AsSpan(8));
        return key;
    }

    /// <summary>Moves a document's entries from its old dates to its new ones (either may be null).</summary>
    public static void Update(WriteTransaction tx, ReadOnlySpan<byte> docKey, (long? Expires, long? Refresh) old, (long? Expires, long? Refresh) now)
    {
        if (old.Expires != now.Expires)
        {
            if (old.Expires is { } o)
                tx.CreateTree(ExpiresTree).Delete(Key(o, docKey));
            if (now.Expires is { } n)
                tx.CreateTree(ExpiresTree).Put(Key(n, docKey), []);
        }
        if (old.Refresh != now.Refresh)
        {
            if (old.Refresh is { } o)
                tx.CreateTree(RefreshTree).Delete(Key(o, docKey));
            if (now.Refresh is { } n)
                tx.CreateTree(RefreshTree).Put(Key(n, docKey), []);
        }
    }

    /// <summary>Keys of documents due (date ≤ <paramref name="now"/>) in <paramref name="tree"/>, oldest first, at most <paramref name="max"/>.</summary>
    public static List<byte[]> Due(Transaction tx, string tree, DateTime now, int max)
    {
        var result = new List<byte[]>();
        if (tx.ReadTree(tree) is not { } t)
            return result;
        var c = t.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok && result.Count < max; ok = c.MoveNext())
        {
            if (BinaryPrimitives.ReadInt64BigEndian(c.Key) > now.Ticks)
                break;
            result.Add(c.Key[8..].ToArray());
        }
        return result;
    }

    /// <summary>Documents waiting in <paramref name="tree"/>.</summary>
    public static long Count(Transaction tx, string tree) => tx.ReadTree(tree)?.Count ?? 0;
}

/// <summary>
/// An expiration or refresh configuration (<c>POST /admin/expiration/config</c>, <c>/admin/refresh/config</c>):
/// whether the task runs and how often (seconds). Property names are read ignoring case (the Node client sends camelCase).
/// </summary>
public sealed record ExpirationConfiguration(bool Disabled, long FrequencyInSec, long? MaxItemsToProcess)
{
    /// <summary>Parses a configuration whose frequency property is <paramref name="frequencyName"/>; 400 naming what is wrong.</summary>
    public static ExpirationConfiguration Parse(JsonElement root, string frequencyName)
    {
        if (root.ValueKind != JsonValueKind.Object)
            throw new BadRequestException($"The configuration must be an object {{\"Disabled\":false,\"{frequencyName}\":60}}.");
        bool disabled = false;
        long frequency = 60;
        long? max = null;
        foreach (var p in root.EnumerateObject())
        {
            if (p.Name.Equals("Disabled", StringComparison.OrdinalIgnoreCase))
                disabled = p.Value.ValueKind == JsonValueKind.True || (p.Value.ValueKind != JsonValueKind.False && p.Value.ValueKind != JsonValueKind.Null
                    ? throw new BadRequestException("Disabled must be true or false.") : false);
            else if (p.Name.Equals(frequencyName, StringComparison.OrdinalIgnoreCase) && p.Value.ValueKind != JsonValueKind.Null)
                frequency = p.Value.ValueKind == JsonValueKind.Number && p.Value.TryGetInt64(out long f) && f > 0 ? f
                    : throw new BadRequestException($"{frequencyName} must be a whole number of seconds ≥ 1.");
            else if (p.Name.Equals("MaxItemsToProcess", StringComparison.OrdinalIgnoreCase) && p.Value.ValueKind != JsonValueKind.Null)
                max = p.Value.ValueKind == JsonValueKind.Number && p.Value.TryGetInt64(out long m) && m > 0 ? m
                    : throw new BadRequestException("MaxItemsToProcess must be a whole number ≥ 1.");
        }
        return new ExpirationConfiguration(disabled, frequency, max);
    }

    /// <summary>Writes it with the frequency under <paramref name="frequencyName"/>.</summary>
    public void Write(Utf8JsonWriter w, string frequencyName)
    {
        w.WriteStartObject();
        w.WriteBoolean(nameof(Disabled), Disabled);
        w.WriteNumber(frequencyName, FrequencyInSec);
        if (MaxItemsToProcess is { } m)
            w.WriteNumber(nameof(MaxItemsToProcess), m);
        w.WriteEndObject();
    }
}
