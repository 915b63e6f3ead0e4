namespace RavenLite.Server.Documents;

/// <summary>
/// Change vectors as RavenDB writes them (docs/protocol.md §1.3, docs/replication.md): entries
/// <c>{tag}:{etag}-{database id}</c> joined by <c>", "</c>, one per database instance that wrote the item or a version
/// it descends from. The database id identifies an entry; the tag names the node it lives on.
/// </summary>
public static class ChangeVectors
{
    /// <summary>The tag of the databases of a server configured without one, and of every database created before tags could be set.</summary>
    public const string DefaultNodeTag = "A";

    /// <summary>
    /// The tag of the entry a cluster-wide transaction adds: <c>RAFT:{transaction index}-{cluster transaction id}</c>.
    /// A version carries the entry of the latest cluster-wide transaction it descends from, which decides conflicts
    /// (<see cref="ClusterOrder"/>).
    /// </summary>
    public const string RaftTag = "RAFT";

    /// <summary>The one-entry change vector <c>{tag}:{etag}-{databaseId}</c>.</summary>
    public static string Format(string tag, long etag, string databaseId) =>
        string.Create(CultureInfo.InvariantCulture, $"{tag}:{etag}-{databaseId}");

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

    /// <summary>The entries of <paramref name="changeVector"/> (empty for null or ""); 400 when one is malformed.</summary>
    public static List<ChangeVectorEntry> Parse(string? changeVector)
    {
        var entries = new List<ChangeVectorEntry>();
        if (string.IsNullOrEmpty(changeVector))
            return entries;
        foreach (var part in changeVector.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries))
        {
            int colon = part.IndexOf(':', StringComparison.Ordinal);
            int dash = colon < 0 ? -1 : part.IndexOf('-', colon);
            if (colon < 1 || dash < colon + 2 || dash == part.Length - 1
                || !long.TryParse(part.AsSpan(colon + 1, dash - colon - 1), NumberStyles.None, CultureInfo.InvariantCulture, out long etag))
                throw new BadRequestException($"'{changeVector}' is not a change vector: each entry is TAG:ETAG-DATABASEID.");
            entries.Add(new ChangeVectorEntry(part[..colon], etag, part[(dash + 1)..]));
        }
        return entries;
    }

    /// <summary>
    /// The entries joined as RavenDB joins them, in one order (by tag, then database id), so that the same entries
    /// always make the same string on every node.
    /// </summary>
    public static string Join(IEnumerable<ChangeVectorEntry> entries) =>
        string.Join(", ", entries.OrderBy(e => e.Tag, StringComparer.Ordinal).ThenBy(e => e.DatabaseId, StringComparer.Ordinal).Select(e => Format(e.Tag, e.Etag, e.DatabaseId)));

    /// <summary>The etag <paramref name="databaseId"/>'s entry in <paramref name="changeVector"/> holds (0 when it has none).</summary>
    public static long EtagOf(string? changeVector, string databaseId)
    {
        foreach (var e in Parse(changeVector))
            if (e.DatabaseId == databaseId)
                return e.Etag;
        return 0;
    }

    /// <summary>Each database id's largest etag of both.</summary>
    public static string Merge(string? a, string? b)
    {
        if (string.IsNullOrEmpty(a))
            return b ?? "";
        if (string.IsNullOrEmpty(b) || a == b)
            return a;
        var merged = Parse(a);
        foreach (var e in Parse(b))
        {
            int i = merged.FindIndex(m => m.DatabaseId == e.DatabaseId);
            if (i < 0)
                merged.Add(e);
            else if (merged[i].Etag < e.Etag)
                merged[i] = e;
        }
        return Join(merged);
    }

    /// <summary><paramref name="changeVector"/> with <paramref name="databaseId"/>'s entry set to <paramref name="etag"/> (added when missing).</summary>
    public static string WithEntry(string? changeVector, string tag, long etag, string databaseId)
    {
        if (string.IsNullOrEmpty(changeVector))
            return Format(tag, etag, databaseId);
        var entries = Parse(changeVector);
        int i = entries.FindIndex(m => m.DatabaseId == databaseId);
        if (i < 0)
            entries.Add(new ChangeVectorEntry(tag, etag, databaseId));
        else
            entries[i] = new ChangeVectorEntry(tag, etag, databaseId);
        return Join(entries);
    }

    /// <summary><paramref name="changeVector"/> without <paramref name="databaseId"/>'s entry.</summary>
    public static string Without(string? changeVector, string databaseId) =>
        Join(Parse(changeVector).Where(e => e.DatabaseId != databaseId));

    /// <summary>
    /// How <paramref name="remote"/> (an incoming version) relates to <paramref name="local"/> (the version held):
    /// <see cref="ChangeVectorOrder.Newer"/> when every local entry is at most the remote's and one is less,
    /// <see cref="ChangeVectorOrder.NotNewer"/> when the local version already contains it (equal or descends from it),
    /// else <see cref="ChangeVectorOrder.Concurrent"/>.
    /// </summary>
    public static ChangeVectorOrder Compare(string remote, string? local)
    {
        if (string.IsNullOrEmpty(local))
            return ChangeVectorOrder.Newer;
        if (remote == local)
            return ChangeVectorOrder.NotNewer;
        var localEntries = Parse(local);
        bool remoteAhead = false, localAhead = false;
        foreach (var r in Parse(remote))
        {
            long l = localEntries.Find(e => e.DatabaseId == r.DatabaseId) is { DatabaseId: not null } found ? found.Etag : 0;
            remoteAhead |= r.Etag > l;
            localAhead |= r.Etag < l;
        }
        var remoteEntries = Parse(remote);
        foreach (var l in localEntries)
            if (!remoteEntries.Exists(e => e.DatabaseId == l.DatabaseId))
                localAhead = true;
        return remoteAhead ? (localAhead ? ChangeVectorOrder.Concurrent : ChangeVectorOrder.Newer) : ChangeVectorOrder.NotNewer;
    }

    /// <summary>
    /// Which of two concurrent versions descends from the later cluster-wide transaction: 1 when <paramref name="a"/>'s
    /// RAFT entries are at least <paramref name="b"/>'s and one is more, -1 for the reverse, 0 when neither (no RAFT
    /// entries, equal ones, or entries of different clusters that disagree). A version without a RAFT entry loses to
    /// one with: the cluster's order is the one every node agrees on.
    /// </summary>
    public static int ClusterOrder(string? a, string? b)
    {
        bool aAhead = false, bAhead = false;
        var aEntries = Parse(a).FindAll(e => e.Tag == RaftTag);
        var bEntries = Parse(b).FindAll(e => e.Tag == RaftTag);
        foreach (var e in aEntries)
        {
            long other = bEntries.Find(x => x.DatabaseId == e.DatabaseId).Etag;
            aAhead |= e.Etag > other;
            bAhead |= e.Etag < other;
        }
        foreach (var e in bEntries)
            bAhead |= !aEntries.Exists(x => x.DatabaseId == e.DatabaseId);
        return aAhead == bAhead ? 0 : aAhead ? 1 : -1;
    }

    /// <summary>A new 22-character database id (base64 of a random GUID, no padding).</summary>
    public static string NewDatabaseId() => Convert.ToBase64String(Guid.NewGuid().ToByteArray()).TrimEnd('=');
}

/// <summary>One entry of a change vector: the etag a database instance (<paramref name="DatabaseId"/>, on node <paramref name="Tag"/>) had reached.</summary>
public readonly record struct ChangeVectorEntry(string Tag, long Etag, string DatabaseId);

/// <summary>How an incoming version's change vector relates to the held one's (<see cref="ChangeVectors.Compare"/>).</summary>
public enum ChangeVectorOrder
{
    /// <summary>The incoming version descends from the held one: it replaces it.</summary>
    Newer,

    /// <summary>The held version already contains the incoming one: nothing to do.</summary>
    NotNewer,

    /// <summary>Neither descends from the other: a conflict.</summary>
    Concurrent,
}
