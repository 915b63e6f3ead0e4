using System.Runtime.InteropServices;
using System.Text;
using RavenLite.Storage.FreeSpace;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Transactions;

/// <summary>
/// The single writer. Pages it modifies are copied first (copy-on-write into private native
/// buffers under new page numbers); nothing is visible to anyone else until <see cref="Commit"/>
/// (or <see cref="CommitAsync"/>) writes one journal record and publishes the new state. Dispose without Commit rolls back.
/// State diagram (docs/architecture.md): Active --Commit()--> Committed; Active --Dispose()--> RolledBack;
/// Commit() failing on I/O --> Failed (environment stops accepting writes).
/// A span read here is valid until the next modification in this transaction.
/// </summary>
public sealed unsafe class WriteTransaction : Transaction
{
    private readonly LinkedListNode<(long Seq, long Snapshot)> _registration;
    private const int InitialCacheSlots = 32;
    private const int MaxCacheSlots = 1 << 16;
    private readonly Dictionary<long, PageBuffer> _dirty = [];
    private PageBuffer?[] _dirtyCache = new PageBuffer?[InitialCacheSlots]; // direct-mapped front of _dirty; grows with it
    private readonly Dictionary<string, Tree?> _trees = new(StringComparer.Ordinal);
    private readonly Tree _root;
    private bool _committed;

    internal WriteTransaction(StorageEnvironment env, LinkedListNode<(long Seq, long Snapshot)> registration, EnvironmentState state, FreeSpaceManager.Scope scope)
        : base(env, state)
    {
        _registration = registration;
        Scope = scope;
        _root = new Tree(this, null, state.RootTree);
    }

    /// <inheritdoc />
    public override long Id => State.TxId + 1;

    /// <inheritdoc />
    public override bool IsWriteTransaction => true;

    internal override Tree RootTree => _root;

    internal FreeSpaceManager.Scope Scope { get; }

    internal IReadOnlyDictionary<long, PageBuffer> DirtyPages => _dirty;

    internal override byte* GetPage(long pageNumber) =>
        TryGetDirty(pageNumber, out var b) ? b.Pointer : Environment.GetWriterPage(pageNumber);

    private bool TryGetDirty(long pageNumber, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out PageBuffer? buffer)
    {
        var cache = _dirtyCache;
        buffer = cache[pageNumber & (cache.Length - 1)];
        if (buffer != null && buffer.PageNumber == pageNumber)
            return true;
        if (!_dirty.TryGetValue(pageNumber, out buffer))
            return false;
        cache[pageNumber & (cache.Length - 1)] = buffer;
        return true;
    }

    private void AddDirty(PageBuffer buffer)
    {
        _dirty[buffer.PageNumber] = buffer;
        if (_dirty.Count > _dirtyCache.Length * 2 && _dirtyCache.Length < MaxCacheSlots)
        {
            // Big transaction: a larger cache keeps most lookups out of the dictionary.
            _dirtyCache = new PageBuffer?[_dirtyCache.Length * 4];
            foreach (var b in _dirty.Values)
                _dirtyCache[b.PageNumber & (_dirtyCache.Length - 1)] = b;
        }
        _dirtyCache[buffer.PageNumber & (_dirtyCache.Length - 1)] = buffer;
    }

    private bool RemoveDirty(long pageNumber, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out PageBuffer? buffer)
    {
        ref var slot = ref _dirtyCache[pageNumber & (_dirtyCache.Length - 1)];
        if (slot != null && slot.PageNumber == pageNumber)
            slot = null;
        return _dirty.Remove(pageNumber, out buffer);
    }

    /// <summary>Returns a writable copy of a page, copying it under a new number unless this transaction already did. <paramref name="newNumber"/> is where it now lives.</summary>
    internal byte* ModifyPage(long pageNumber, out long newNumber)
    {
        if (TryGetDirty(pageNumber, out var b))
        {
            newNumber = pageNumber;
            return b.Pointer;
        }
        byte* src = Environment.GetWriterPage(pageNumber);
        newNumber = Scope.Allocate(1);
        var copy = new PageBuffer(newNumber, 1, Environment.Pool) { BasePage = pageNumber };
        CopyTreePage(src, copy.Pointer);
        ((PageHeader*)copy.Pointer)->PageNumber = newNumber;
        AddDirty(copy);
        Scope.Free(pageNumber, 1, allocatedHere: false);
        return copy.Pointer;
    }

    /// <summary>
    /// Copies a tree page's meaningful bytes — header and offset array [0, Lower), node area [Upper, end) — and zeroes
    /// the free gap between them instead of copying it (a third of a typical leaf: less memory read per copy-on-write;
    /// zeroed, because a pool buffer may last have held another database's page). A page whose header is not a sane
    /// tree header is copied whole.
    /// </summary>
    internal static void CopyTreePage(byte* src, byte* dst)
    {
        var h = (PageHeader*)src;
        int lower = h->Lower, upper = h->Upper;
        if (!TreePage.HasSaneGap(src))
        {
            Buffer.MemoryCopy(src, dst, StorageConstants.PageSize, StorageConstants.PageSize);
            return;
        }
        Buffer.MemoryCopy(src, dst, lower, lower);
        NativeMemory.Clear(dst + lower, (nuint)(upper - lower));
        Buffer.MemoryCopy(src + upper, dst + upper, StorageConstants.PageSize - upper, StorageConstants.PageSize - upper);
    }

    /// <summary>Allocates <paramref name="count"/> zeroed contiguous pages.</summary>
    internal byte* AllocatePages(int count, out long pageNumber)
    {
        pageNumber = Scope.Allocate(count);
        var b = new PageBuffer(pageNumber, count, Environment.Pool);
        NativeMemory.Clear(b.Pointer, (nuint)b.Length);
        AddDirty(b);
        return b.Pointer;
    }

    /// <summary>Frees pages this transaction no longer references.</summary>
    internal void FreePages(long pageNumber, int count)
    {
        if (RemoveDirty(pageNumber, out var b))
        {
            b.Free();
            Scope.Free(pageNumber, count, allocatedHere: true);
        }
        else
        {
            Scope.Free(pageNumber, count, allocatedHere: false);
        }
    }

    /// <inheritdoc />
    public override Tree? ReadTree(string name)
    {
        ThrowIfDisposed();
        if (_trees.TryGetValue(name, out var t))
            return t;
        t = LoadTree(name);
        _trees[name] = t;
        return t;
    }

    /// <summary>Opens a tree, creating an empty one when missing. Tree names are 1–1024 UTF-8 bytes.</summary>
    public Tree CreateTree(string name)
    {
        var t = ReadTree(name);
        if (t != null)
            return t;
        Tree.ValidateName(name);
        t = new Tree(this, name, default) { IsModified = true };
        _trees[name] = t;
        return t;
    }

    /// <summary>Deletes a tree and frees all its pages. Returns false when it does not exist.</summary>
    public bool DeleteTree(string name)
    {
        var t = ReadTree(name);
        if (t == null)
            return false;
        t.FreeAllPages();
        Span<byte> key = stackalloc byte[Encoding.UTF8.GetMaxByteCount(name.Length)];
        _root.Delete(key[..Tree.EncodeName(name, key)]);
        _trees[name] = null;
        return true;
    }

    /// <summary>
    /// Makes the transaction's changes durable per the environment's <see cref="DurabilityMode"/>
    /// and visible to transactions that start afterwards. On an I/O error the transaction is not
    /// committed and the environment stops accepting writes (<see cref="StorageFailedException"/>).
    /// </summary>
    public void Commit()
    {
        var done = CommitCore(inline: true, onCompleted: null);
        if (!done.IsCompletedSuccessfully)
            done.GetAwaiter().GetResult();
    }

    /// <summary>
    /// Async commit: the changes become the base of the next write transaction at once (dispose this
    /// one and begin the next while the journal write is in flight); they become durable and visible
    /// to new readers when the returned task completes. Records reach the journal in commit order and
    /// commits queued together share one fdatasync. A faulted task (<see cref="StorageFailedException"/>)
    /// means this and every later commit failed: the environment accepts no writes until reopened.
    /// With <paramref name="writeHereWhenIdle"/>, when no other commit is being written, the journal
    /// write and fsync run on the calling thread before this returns (no thread hop; for callers with
    /// nothing to overlap); otherwise they run on the thread pool. <paramref name="onCompleted"/>, when
    /// given, runs on the journal thread right after the task completes (success or failure): a cheap
    /// wake-up for a dedicated thread, without the thread-pool hop of a task continuation. It must not block.
    /// </summary>
    public Task CommitAsync(bool writeHereWhenIdle = false, Action? onCompleted = null) => CommitCore(writeHereWhenIdle, onCompleted);

    private Task CommitCore(bool inline, Action? onCompleted)
    {
        ThrowIfDisposed();
        if (_committed)
            throw new InvalidOperationException("The transaction is already committed.");
        Span<byte> key = stackalloc byte[StorageConstants.MaxKeySize];
        Span<byte> header = stackalloc byte[TreeHeader.SizeOf];
        foreach (var (name, tree) in _trees)
        {
            if (tree is not { IsModified: true })
                continue;
            int n = Tree.EncodeName(name, key);
            MemoryMarshal.Write(header, in tree.Header);
            _root.Put(key[..n], header);
        }
        var done = Environment.CommitTransaction(this, _root.Header, inline, onCompleted);
        _committed = true;
        State = Environment.WriterState;
        return done;
    }

    /// <summary>Forgets the dirty pages without freeing them: after commit they belong to the page table.</summary>
    internal void DetachDirtyPages()
    {
        _dirty.Clear();
        Array.Clear(_dirtyCache);
    }

    /// <inheritdoc />
    public override void Dispose()
    {
        if (Disposed)
            return;
        Disposed = true;
        foreach (var b in _dirty.Values)
            b.Free();
        _dirty.Clear();
        Environment.EndWriteTransaction(this, _registration, _committed);
    }
}
