using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Transactions;

/// <summary>
/// A snapshot: sees the environment exactly as of its start for its whole life, whatever commits
/// meanwhile. Any number run concurrently with each other and with the writer. Spans it hands out
/// stay valid until it is disposed. Dispose promptly: pages it can see are not reused while it lives.
/// </summary>
public sealed unsafe class ReadTransaction : Transaction
{
    private readonly LinkedListNode<(long Seq, long Snapshot)> _registration;
    private readonly Tree _root;

    internal ReadTransaction(StorageEnvironment env, LinkedListNode<(long Seq, long Snapshot)> registration, EnvironmentState state)
        : base(env, state)
    {
        _registration = registration;
        _root = new Tree(this, null, state.RootTree);
    }

    /// <inheritdoc />
    public override long Id => State.TxId;

    /// <inheritdoc />
    public override bool IsWriteTransaction => false;

    internal override Tree RootTree => _root;

    internal override byte* GetPage(long pageNumber) => Environment.GetCommittedPage(pageNumber);

    /// <inheritdoc />
    public override void Dispose()
    {
        if (Disposed)
            return;
        Disposed = true;
        Environment.EndTransaction(_registration);
    }
}
