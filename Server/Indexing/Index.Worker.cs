using Lucene.Net.Index;

namespace RavenLite.Server.Indexing;

/// <summary>The worker loop: one thread per index, batches while there is work, commits when idle or due, backs off on failures.</summary>
public sealed partial class Index
{
    private void Work()
    {
        _workerThreadId = Storage.Platform.ThreadPriorities.CurrentThreadId();
        Storage.Platform.ThreadPriorities.SetNice(_workerThreadId, NiceOf(Definition.Priority));
        int failures = 0;
        long lastBatch = 0;
        while (!_stopping)
        {
            try
            {
                if (!Step(ref failures, ref lastBatch))
                    break;
            }
            catch (Exception e) when (!_stopping)
            {
                // What escaped a step outside a batch (starting a commit, a wait): an index error like a failed batch — an
                // exception leaving this thread would end the whole server.
                Failed(e, ref failures);
            }
            catch (Exception) when (_stopping)
            {
                break;
            }
        }
    }

    /// <summary>One turn of the worker: a batch, a commit or a wait. False when the worker is to end.</summary>
    private bool Step(ref int failures, ref long lastBatch)
    {
        if (_committing is { IsCompleted: true } && !TryCommit(wait: false))
            return true;
        if (_paused || Definition.State == "Disabled")
        {
            // Stopped: what was indexed is committed, so that the index does not fall back to an older commit (and
            // its queries to fewer results) should a later batch or commit fail, on a full disk say.
            if (TryCommit())
                _stopped?.TrySetResult();
            _wake.Wait(TimeSpan.FromMilliseconds(250));
            return true;
        }
        bool worked;
        try
        {
            worked = IndexBatch();
            failures = 0;
            _state = "Normal";
        }
        catch (Exception e) when (!_stopping && Storage.DiskFullException.IsDiskFull(e))
        {
            WaitForSpace(e);
            return true;
        }
        catch (Exception e) when (!_stopping)
        {
            Failed(e, ref failures);
            return true;
        }
        catch (Exception) when (_stopping)
        {
            return false; // closing (the database may already refuse writes): the batch was rolled back and is indexed again on open
        }
        if (worked)
        {
            lastBatch = Stopwatch.GetTimestamp();
            return true;
        }
        var idle = Stopwatch.GetElapsedTime(lastBatch); // read once: a second reading is later, and the wait could come out negative
        if (_uncommitted && idle < IdleBeforeCommit)
        {
            // Caught up: commit once no change came for a moment, so that a trickle of single changes is published
            // batch by batch without a Lucene commit (and its fsyncs) between each.
            _wake.Wait(IdleBeforeCommit - idle);
            return true;
        }
        BeginCommit(); // caught up: make the position durable now, beside whatever comes next
        _wake.Wait(TimeSpan.FromMilliseconds(_committing != null ? 10 : 250)); // while it runs, look for its end often
        return true;
    }

    /// <summary>A failed step: an index error (logged), a rebuild after a corruption or the third failure in a row, and a pause growing with the failures.</summary>
    private void Failed(Exception e, ref int failures)
    {
        failures++;
        _state = "Error";
        RecordError(null, "Indexing failed: " + e.Message);
        Logging.Log.IndexingFailed(_logger, e, Name);
        if (e is CorruptIndexException || failures >= 3)
            TryRebuild();
        int f = Math.Min(failures, 10); // 100·f² overflows an int past 4,634 failures in a row (hours of them)
        _wake.Wait(TimeSpan.FromMilliseconds(Math.Min(5000, 100 * f * f)));
    }

    /// <summary>
    /// Commits what is pending and waits for it (or, <paramref name="wait"/> false, finishes the commit that ran beside
    /// the worker); on a full disk waits for space (false: the worker goes on at once), any other failure is an index
    /// error (and the next idle moment tries again).
    /// </summary>
    private bool TryCommit(bool wait = true)
    {
        try
        {
            if (wait)
                CommitPending();
            else
                EndCommit(wait: false);
        }
        catch (Exception e) when (!_stopping && Storage.DiskFullException.IsDiskFull(e))
        {
            WaitForSpace(e);
            return false;
        }
        catch (Exception e) when (!_stopping)
        {
            RecordError(null, "Committing the index failed: " + e.Message);
            Logging.Log.IndexingFailed(_logger, e, Name);
        }
        return true;
    }

    /// <summary>
    /// After a batch or commit found the disk full: the index goes back to its last commit (a fresh writer, as after any
    /// failed batch; Lucene may have closed the old one), reports it once per episode (an index error, the log, the
    /// Paused status), and waits a second before the worker tries again. Never a rebuild: the files are intact.
    /// </summary>
    private void WaitForSpace(Exception e)
    {
        if (!_diskFull)
        {
            _diskFull = true;
            RecordError(null, "Indexing paused: the disk is full. The index serves queries as of its last commit and goes on by itself once space is freed. " + e.Message);
            Logging.Log.IndexingFailed(_logger, e, Name);
        }
        AbandonCommit();
        RollbackQuietly();
        _uncommitted = false;
        while (true)
        {
            // A second, not cut short by new documents (each would wake the worker into another attempt).
            for (int i = 0; i < 10 && !_stopping; i++)
                Thread.Sleep(100);
            if (_stopping)
                return;
            try
            {
                OpenWriterAndReader();
                return;
            }
            catch (IOException)
            {
                // Still no room for the new writer: wait again.
            }
        }
    }
}
