using RavenLite.Server.Documents;

namespace RavenLite.Server.Revisions;

/// <summary>Documents put back to one of their revisions, inside a write transaction.</summary>
public static class RevisionsRevert
{
    /// <summary>Writes <paramref name="revision"/>'s content as its document's new version (a deletion revision deletes it).</summary>
    public static void To(DocumentsWriteContext context, StoredDocument revision)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(revision);
        using (var parsed = JsonDocument.Parse(revision.Json))
        {
            if (parsed.RootElement.GetProperty("@metadata").TryGetProperty("@flags", out var f) && f.GetString()!.Contains("DeleteRevision", StringComparison.Ordinal))
            {
                context.Delete(revision.Id, null);
                return;
            }
        }
        context.Put(revision.Id, revision.Json, null);
    }

    /// <summary>Reverts each document to its revision of the given change vector; a 400 (nothing written) when one has no such revision.</summary>
    public static void ToChangeVectors(DocumentsWriteContext context, IEnumerable<(string Id, string ChangeVector)> wanted)
    {
        ArgumentNullException.ThrowIfNull(context);
        ArgumentNullException.ThrowIfNull(wanted);
        foreach (var (id, cv) in wanted)
        {
            var revision = RevisionsStore.GetByChangeVector(context.Transaction, cv, context.Storage);
            if (revision == null || !string.Equals(revision.Id, id, StringComparison.OrdinalIgnoreCase))
                throw new BadRequestException($"Document '{id}' has no revision with change vector {cv}.");
            To(context, revision);
        }
    }

    /// <summary>
    /// Puts the document of <paramref name="key"/> back to its newest revision written at or before
    /// <paramref name="time"/> (or deletes it when it was created after): false when its newest revision is not after
    /// <paramref name="time"/> or its collection is not among <paramref name="collections"/> (null: all).
    /// </summary>
    public static bool ToTime(DocumentsWriteContext context, byte[] key, DateTime time, IReadOnlySet<string>? collections)
    {
        ArgumentNullException.ThrowIfNull(context);
        var newest = RevisionsStore.GetFor(context.Transaction, key, 0, 1, context.Storage);
        if (newest.Count == 0 || newest[0].LastModified <= time || (collections != null && !collections.Contains(newest[0].Collection)))
            return false;
        var target = RevisionsStore.GetBefore(context.Transaction, key, time, context.Storage);
        if (target != null)
            To(context, target);
        else if (context.Get(newest[0].Id) != null)
            context.Delete(newest[0].Id, null);
        return true;
    }
}
