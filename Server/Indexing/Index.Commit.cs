using Lucene.Net.Index;

namespace RavenLite.Server.Indexing;

/// <summary>Commits: the Lucene commit with the position in its user data, begun beside the next batches and ended before the one after.</summary>
public sealed partial class Index
{
    /// <summary>
    /// Makes what the published reader shows durable, and waits for it: the commit running beside the worker (if any),
    /// then one of what was published since.
    /// </summary>
    private void CommitPending()
    {
        EndCommit(wait: true);
        if (!_uncommitted)
            return;
        BeginCommit();
        EndCommit(wait: true);
    }

    /// <summary>
    /// Starts a Lucene commit of what the published reader shows, beside the worker (unless one is running): its user
    /// data is the position of the last published batch; the map and reduce results behind it are made durable first;
    /// then the index folder is fsynced (Lucene.Net does not do that itself). Later batches go on meanwhile: Lucene's
    /// writer takes documents during a commit, and a commit that happens to hold some of them is harmless, as they are
    /// after its position and are indexed again (replacing their entries) if the index ever reopens from it.
    /// </summary>
    private void BeginCommit()
    {
        if (_committing != null || !_uncommitted)
            return;
        _writer.SetCommitData(CommitData(_snapshot.Position));
        _uncommitted = false;
        _lastCommit = Stopwatch.GetTimestamp();
        _committingReduced = _reducedSinceCommit.Count > 0 ? [.. _reducedSinceCommit] : null;
        _reducedSinceCommit.Clear();
        var writer = _writer;
        var mapResultsDurable = _mapResultsDurable;
        string folder = _luceneDir;
        _committing = Task.Run(() =>
        {
            mapResultsDurable?.GetAwaiter().GetResult(); // map and reduce results are durable before the entries made from them
            writer.Commit();
            new Storage.Platform.DiskFileSystem().SyncDirectory(folder);
        });
    }

    /// <summary>A commit's user data: the position (etags per collection, tombstone etag) and the dynamic fields so far.</summary>
    private Dictionary<string, string> CommitData(IndexPosition position)
    {
        var data = new Dictionary<string, string>();
        foreach (var (c, e) in position.LastEtags)
            data[EtagKeyPrefix + c.ToLowerInvariant()] = e.ToString(CultureInfo.InvariantCulture);
        data[TombstoneKey] = position.LastTombstoneEtag.ToString(CultureInfo.InvariantCulture);
        if (Compiled.DynamicFields is { Count: > 0 } dynamicFields)
            data[DynamicFieldsKey] = JsonSerializer.Serialize(dynamicFields.Select(f => new DynamicFieldRecord(f.Name, f.Indexing, f.Stored)));
        return data;
    }

    /// <summary>
    /// Finishes the commit started by <see cref="BeginCommit"/> once it is done (or waits for it): after a success, the
    /// map-reduce keys it made durable are no longer dirty (but those reduced again since); a failure is rethrown, and
    /// what it was to commit is pending again.
    /// </summary>
    private void EndCommit(bool wait)
    {
        var committing = _committing;
        if (committing == null || (!wait && !committing.IsCompleted))
            return;
        WaitQuietly(committing);
        _committing = null;
        var reduced = _committingReduced;
        _committingReduced = null;
        if (committing.Exception is { } failed)
        {
            _uncommitted = true;
            if (reduced != null)
                _reducedSinceCommit.UnionWith(reduced);
            System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(failed.InnerException ?? failed);
        }
        _diskFull = false; // a commit went through: there is room again (a batch alone may not have written anything)
        if (_mapReduce != null && reduced != null)
        {
            reduced.ExceptWith(_reducedSinceCommit);
            if (reduced.Count > 0)
            {
                using var tx = _db.Environment.WriteTransaction();
                _mapReduce.Clean(tx, reduced);
                tx.Commit();
            }
        }
    }

    /// <summary>Before a rollback: waits for a running commit and forgets it (the reopened writer starts from the last commit there is).</summary>
    private void AbandonCommit()
    {
        if (_committing != null)
            WaitQuietly(_committing);
        _committing = null;
        _committingReduced = null;
    }

    /// <summary>Waits for <paramref name="task"/>; its failure, if any, is left in it.</summary>
    private static void WaitQuietly(Task task)
    {
        try
        {
            task.Wait();
        }
        catch (AggregateException)
        {
        }
    }

    /// <summary>Rolls the writer back to its last commit and closes it (releasing the index's lock); a no-op when Lucene closed it already.</summary>
    private void RollbackQuietly()
    {
        try
        {
            _writer.Rollback();
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException or InvalidOperationException)
        {
        }
    }

    /// <summary>Makes <paramref name="reader"/> (holding the given positions) what queries see, and lets the previous one go once its queries are done.</summary>
    private void Publish(DirectoryReader reader, IReadOnlyDictionary<string, long> etags, long lastTomb)
    {
        var previous = _snapshot;
        _snapshot = new IndexSnapshot(reader, new IndexPosition(new Dictionary<string, long>(etags, StringComparer.OrdinalIgnoreCase), lastTomb, reader.NumDocs));
        if (previous != null && !_snapshotReleased)
            previous.Reader.DecRef();
        _snapshotReleased = false;
        _db.Documents.Changes.Publish(new Changes.ChangeEvent(Changes.ChangeKind.Index, "BatchCompleted", Name: Name));
    }
}
