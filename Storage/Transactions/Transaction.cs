using System.Text;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Transactions;

/// <summary>
/// Common base of read and write transactions: a snapshot of the environment and the page access
/// trees go through. Not thread-safe: use a transaction from one thread at a time.
/// </summary>
public abstract unsafe class Transaction : IDisposable
{
    private protected Transaction(StorageEnvironment env, EnvironmentState state)
    {
        Environment = env;
        State = state;
    }

    /// <summary>The environment.</summary>
    public StorageEnvironment Environment { get; }

    /// <summary>For a read transaction the id of the snapshot it sees; for a write transaction the id it commits as.</summary>
    public abstract long Id { get; }

    /// <summary>True for a write transaction.</summary>
    public abstract bool IsWriteTransaction { get; }

    internal EnvironmentState State { get; private protected set; }

    private protected bool Disposed { get; set; }

    /// <summary>Address of a page as this transaction sees it; valid for the transaction's life.</summary>
    internal abstract byte* GetPage(long pageNumber);

    internal abstract Tree RootTree { get; }

    /// <summary>A copy of one page as this transaction sees it (diagnostics and micro-benchmarks).</summary>
    internal byte[] CopyPage(long pageNumber) => new ReadOnlySpan<byte>(GetPage(pageNumber), StorageConstants.PageSize).ToArray();

    /// <summary>Opens an existing tree, or returns null.</summary>
    public virtual Tree? ReadTree(string name)
    {
        ThrowIfDisposed();
        return LoadTree(name);
    }

    private protected Tree? LoadTree(string name)
    {
        Span<byte> key = stackalloc byte[Encoding.UTF8.GetMaxByteCount(name.Length)];
        int n = Tree.EncodeName(name, key);
        if (!RootTree.TryGet(key[..n], out var value))
            return null;
        return new Tree(this, name, Tree.ReadHeader(value));
    }

    /// <summary>Names of all trees, in ordinal order of their UTF-8 bytes.</summary>
    public IReadOnlyList<string> GetTreeNames()
    {
        ThrowIfDisposed();
        var names = new List<string>();
        var c = RootTree.CreateCursor();
        if (c.SeekToFirst())
        {
            do
                names.Add(Encoding.UTF8.GetString(c.Key));
            while (c.MoveNext());
        }
        return names;
    }

    private protected void ThrowIfDisposed() => ObjectDisposedException.ThrowIf(Disposed, this);

    /// <inheritdoc />
    public abstract void Dispose();
}
