using System.Globalization;

namespace RavenLite.Server.Documents;

/// <summary>Change vectors in RavenDB's single-node shape <c>A:{etag}-{database id}</c> (PROTOCOL.md §1.3).</summary>
public static class ChangeVectors
{
    /// <summary>The node tag every change vector, HiLo id and operation carries.</summary>
    public const string NodeTag = "A";

    /// <summary>The change vector of a document written at <paramref name="etag"/>.</summary>
    public static string Format(long etag, string databaseId) =>
        string.Create(CultureInfo.InvariantCulture, $"{NodeTag}:{etag}-{databaseId}");

    /// <summary>A new 22-character database id (base64 of a random GUID, no padding).</summary>
    public static string NewDatabaseId() => Convert.ToBase64String(Guid.NewGuid().ToByteArray()).TrimEnd('=');
}
