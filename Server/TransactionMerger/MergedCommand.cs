using RavenLite.Server.Documents;

namespace RavenLite.Server.TransactionMerger;

/// <summary>
/// One write request queued to a database's <see cref="WriteMerger"/>. <see cref="Execute"/> runs on
/// the merger thread inside a shared write transaction; it may throw (an DomainException such as a 409)
/// and is then re-run alone, so it must be re-runnable and must do all its checking in Execute.
/// <see cref="Completion"/> finishes only after the transaction holding it is durable.
/// A command made with <c>completeInline</c> runs the continuations of <see cref="Completion"/> on the
/// merger thread, inside its completion: for requests whose rest is only writing a short answer
/// (single-document PUT and DELETE), it saves handing each request to the thread pool. Such a
/// continuation must not block or do long work, and must not dispose the database (its merger would
/// wait for itself); <see cref="Http.ThreadPoolHop"/> keeps every other request off the merger thread.
/// </summary>
public abstract class MergedCommand(bool completeInline = false)
{
    private readonly TaskCompletionSource _completion = new(completeInline ? TaskCreationOptions.None : TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Completes when the command's transaction has committed (durably), or faults with why it did not.</summary>
    public Task Completion => _completion.Task;

    /// <summary>Storage operations this command counts as (documents written), for batching bounds and stats.</summary>
    public virtual int Operations => 1;

    /// <summary>Approximate bytes it writes, for the merger's byte bound.</summary>
    public virtual long Bytes => 0;

    /// <summary>Applies the command. Runs on the merger thread.</summary>
    public abstract void Execute(DocumentsWriteContext context);

    internal void Succeed() => _completion.TrySetResult();

    internal void Fail(Exception e) => _completion.TrySetException(e);
}

/// <summary>A command from a delegate (single-document endpoints, HiLo).</summary>
public sealed class DelegateCommand<T>(Func<DocumentsWriteContext, T> action, long bytes = 0, bool completeInline = false) : MergedCommand(completeInline)
{
    /// <summary>The value the delegate returned in the committed run.</summary>
    public T? Result { get; private set; }

    /// <inheritdoc />
    public override long Bytes => bytes;

    /// <inheritdoc />
    public override void Execute(DocumentsWriteContext context) => Result = action(context);
}
