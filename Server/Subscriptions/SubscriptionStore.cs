using System.Text.Json.Serialization;
using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Subscriptions;

/// <summary>
/// A data subscription as stored (RavenDB's <c>SubscriptionState</c> fields, plus the etag it resumes after).
/// <see cref="LastEtag"/> moves only when a worker acknowledges a batch, durably: after a crash of either side the
/// next batch starts after the last acknowledged one, so every document is delivered at least once and none skipped.
/// </summary>
public sealed class SubscriptionState
{
    /// <summary>Its id (a number, as RavenDB's raft index).</summary>
    public long SubscriptionId { get; set; }

    /// <summary>Its name (unique, any casing).</summary>
    public string SubscriptionName { get; set; } = "";

    /// <summary>The RQL.</summary>
    public string Query { get; set; } = "";

    /// <summary>The change vector of the last acknowledged document (what the clients show).</summary>
    public string? ChangeVectorForNextBatchStartingPoint { get; set; }

    /// <summary>Documents up to this etag were delivered and acknowledged.</summary>
    public long LastEtag { get; set; }

    /// <summary>The node that serves it while it is a member of the database's group (RavenDB's <c>MentorNode</c>); null: the cluster picks one.</summary>
    public string? MentorNode { get; set; }

    /// <summary>A disabled subscription accepts no worker.</summary>
    public bool Disabled { get; set; }

    /// <summary>When the last batch was acknowledged.</summary>
    public DateTime? LastBatchAckTime { get; set; }

    /// <summary>When a worker last connected.</summary>
    public DateTime? LastClientConnectionTime { get; set; }
}

/// <summary>The subscriptions of a database, in its storage (tree <c>Subscriptions</c>: lower-cased name → JSON).</summary>
public static class SubscriptionStore
{
    /// <summary>The tree.</summary>
    public const string TreeName = "Subscriptions";

    private static readonly JsonSerializerOptions Json = new() { DefaultIgnoreCondition = JsonIgnoreCondition.Never };

    private static byte[] Key(string name) => Encoding.UTF8.GetBytes(name.ToLowerInvariant());

    /// <summary>One subscription, or null.</summary>
    public static SubscriptionState? Get(Transaction tx, string name) =>
        tx.ReadTree(TreeName) is { } t && t.TryGet(Key(name), out var v) ? JsonSerializer.Deserialize<SubscriptionState>(v, Json) : null;

    /// <summary>Every subscription, by name.</summary>
    public static List<SubscriptionState> All(Transaction tx)
    {
        var result = new List<SubscriptionState>();
        if (tx.ReadTree(TreeName) is not { } t)
            return result;
        var c = t.CreateCursor();
        for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
            result.Add(JsonSerializer.Deserialize<SubscriptionState>(c.Value, Json)!);
        return result;
    }

    /// <summary>Stores (creates or replaces) a subscription.</summary>
    public static void Put(DocumentsWriteContext ctx, SubscriptionState state) =>
        ctx.Transaction.CreateTree(TreeName).Put(Key(state.SubscriptionName), JsonSerializer.SerializeToUtf8Bytes(state, Json));

    /// <summary>Removes a subscription; false when there was none.</summary>
    public static bool Delete(DocumentsWriteContext ctx, string name) => ctx.Transaction.CreateTree(TreeName).Delete(Key(name));
}
