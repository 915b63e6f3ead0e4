namespace RavenLite.Server.Documents;

/// <summary>Collection naming rules.</summary>
public static class Collections
{
    /// <summary>The collection of documents whose metadata names none.</summary>
    public const string Empty = "@empty";

    /// <summary>The collection of HiLo state documents (<c>Raven/Hilo/{tag}</c>).</summary>
    public const string Hilo = "@hilo";

    /// <summary>The id prefix of HiLo state documents.</summary>
    public const string HiLoIdPrefix = "Raven/Hilo/";

    /// <summary>True for a HiLo state document's id (any casing).</summary>
    public static bool IsHiLoId(string id) => id.StartsWith(HiLoIdPrefix, StringComparison.OrdinalIgnoreCase);

    /// <summary>True for the HiLo state documents' collection (never revisioned, never expired).</summary>
    public static bool IsHiLoCollection(string collection) => string.Equals(collection, Hilo, StringComparison.OrdinalIgnoreCase);

    /// <summary>Longest collection name, in characters.</summary>
    public const int MaxLength = 256;

    /// <summary>400 when a collection name is too long or holds control characters.</summary>
    public static void Validate(string name)
    {
        if (name.Length > MaxLength)
            throw new BadRequestException($"Collection name is {name.Length} characters long; the limit is {MaxLength}.");
        foreach (char ch in name)
            if (char.IsControl(ch))
                throw new BadRequestException("Collection names may not contain control characters.");
    }
}
