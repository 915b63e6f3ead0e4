using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Replication;

/// <summary>
/// What a destination has applied from each source (docs/format/documents.md, tree <c>ReplicationSources</c>: key the
/// source's database id, value its last etag applied, int64). Written in the transaction that applies a batch, so after
/// any crash the source resumes exactly after what is durable here.
/// </summary>
internal static class ReplicationPositions
{
    private const string Tree = "ReplicationSources";

    public static long Get(Transaction tx, string sourceDatabaseId) =>
        tx.ReadTree(Tree) is { } t && t.TryGet(Encoding.UTF8.GetBytes(sourceDatabaseId), out var v) ? BinaryPrimitives.ReadInt64LittleEndian(v) : 0;

    public static void Set(WriteTransaction tx, string sourceDatabaseId, long etag)
    {
        Span<byte> value = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(value, etag);
        tx.CreateTree(Tree).Put(Encoding.UTF8.GetBytes(sourceDatabaseId), value);
    }
}
