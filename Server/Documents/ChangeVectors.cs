namespace RavenLite.Server.Documents;

/// <summary>Change vectors in RavenDB's single-node shape <c>A:{etag}-{database id}</c> (docs/protocol.md §1.3).</summary>
public static class ChangeVectors
{
    /// <summary>The node tag every change vector, HiLo id and operation carries.</summary>
    public const string NodeTag = "A";

    /// <summary>The change vector of a document written at <paramref name="etag"/>.</summary>
    public static string Format(long etag, string databaseId) =>
        string.Create(CultureInfo.InvariantCulture, $"{NodeTag}:{etag}-{databaseId}");

    /// <summary>The etag of a change vector <c>A:{etag}-{id}</c> (the first entry when there are several); false when it is not one.</summary>
    public static bool TryParseEtag(string changeVector, out long etag)
    {
        etag = 0;
        int colon = changeVector.IndexOf(':', StringComparison.Ordinal);
        if (colon < 0)
            return false;
        int dash = changeVector.IndexOf('-', colon);
        return dash > colon + 1 && long.TryParse(changeVector.AsSpan(colon + 1, dash - colon - 1), NumberStyles.None, CultureInfo.InvariantCulture, out etag);
    }

    /// <summary>A new 22-character database id (base64 of a random GUID, no padding).</summary>
    public static string NewDatabaseId() => Convert.ToBase64String(Guid.NewGuid().ToByteArray()).TrimEnd('=');
}
