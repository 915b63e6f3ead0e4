namespace RavenLite.Server.Documents;

/// <summary>
/// What the document extensions share about the things they attach to a document (counters, attachments, time series,
/// revisions): their keys start with the document's key and a 0x1E separator (which no id holds: ids refuse control
/// characters), and their names follow one rule.
/// </summary>
public static class ExtensionKeys
{
    /// <summary>The separator after the document key (and between a key's later parts).</summary>
    public const byte Separator = 0x1E;

    /// <summary>The prefix of every key an extension stores for the document of <paramref name="docKey"/>: the key, then <see cref="Separator"/>.</summary>
    public static byte[] Prefix(ReadOnlySpan<byte> docKey)
    {
        var p = new byte[docKey.Length + 1];
        docKey.CopyTo(p);
        p[^1] = Separator;
        return p;
    }

    /// <summary>
    /// A 400 for a <paramref name="kind"/> name (<c>counter</c>, <c>attachment</c>, <c>time-series</c>) that is empty (or,
    /// unless <paramref name="blankAllowed"/>, only white space), longer than <paramref name="maxBytes"/> UTF-8 bytes, or
    /// holds control characters.
    /// </summary>
    public static void ValidateName(string? name, string kind, int maxBytes, bool blankAllowed = false)
    {
        ArgumentNullException.ThrowIfNull(kind);
        string capitalized = char.ToUpperInvariant(kind[0]) + kind[1..];
        if (blankAllowed ? string.IsNullOrEmpty(name) : string.IsNullOrWhiteSpace(name))
            throw new BadRequestException($"{("aeiou".Contains(kind[0], StringComparison.Ordinal) ? "An" : "A")} {kind} name must not be empty.");
        if (Encoding.UTF8.GetByteCount(name) > maxBytes)
            throw new BadRequestException($"{capitalized} name '{name[..Math.Min(40, name.Length)]}...' is longer than {maxBytes} UTF-8 bytes.");
        foreach (char ch in name)
            if (char.IsControl(ch))
                throw new BadRequestException($"{capitalized} names may not contain control characters.");
    }
}
