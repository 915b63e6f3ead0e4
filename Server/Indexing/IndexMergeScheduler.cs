using Lucene.Net.Index;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Runs an index's Lucene merges on one long-lived thread. Lucene.Net's ConcurrentMergeScheduler starts a thread per
/// merge, and .NET's Thread.Start waits until the new thread runs: the index worker, which asks for merges after every
/// near-real-time reopen (a merge of four small segments every few changes), waited for that on a busy machine,
/// which showed in the latency of single changes. Here a request
/// only queues the writer's pending merges and wakes the thread. As ConcurrentMergeScheduler does, the caller is held
/// back when merges fall behind — here at twelve queued or running (its default of six held the worker behind a
/// build's last large merge) — so segments cannot pile up faster than they merge. The thread runs at normal
/// priority: at a low one, merges fall behind on busy cores and the worker waits for them.
/// </summary>
internal sealed class IndexMergeScheduler(string indexName, Action<Exception> failed) : MergeScheduler
{
    private const int MaxQueued = 12;

    private readonly object _gate = new();
    private readonly Queue<MergePolicy.OneMerge> _queue = new();
    private IndexWriter? _writer; // a scheduler serves the one writer its configuration was given to
    private Thread? _thread;
    private bool _running;
    private bool _disposed;

    public override void Merge(IndexWriter writer, MergeTrigger trigger, bool newMergesFound)
    {
        lock (_gate)
        {
            if (_disposed)
                return;
            // Not the merge thread itself (a merge's end asks for the next merges): it would wait for itself.
            while (_queue.Count + (_running ? 1 : 0) >= MaxQueued && writer.HasPendingMerges() && !_disposed && Thread.CurrentThread != _thread)
                Monitor.Wait(_gate, 100);
            _writer = writer;
            foreach (var merge in TakePending(writer))
                _queue.Enqueue(merge);
            if (_queue.Count == 0)
                return;
            if (_thread == null)
            {
                _thread = new Thread(Run) { IsBackground = true, Name = "merges " + indexName };
                _thread.Start(); // once per writer, not per merge
            }
            Monitor.PulseAll(_gate);
        }
    }

    private void Run()
    {
        while (true)
        {
            MergePolicy.OneMerge next;
            IndexWriter writer;
            lock (_gate)
            {
                while (_queue.Count == 0 && !_disposed)
                    Monitor.Wait(_gate);
                if (_queue.Count == 0)
                    return; // disposed, nothing left
                next = _queue.Dequeue();
                writer = _writer!;
                _running = true;
            }
            try
            {
                writer.Merge(next); // an aborted merge (rollback, close) returns at once
            }
            catch (ObjectDisposedException)
            {
                // the writer closed meanwhile (its merges were aborted)
            }
            catch (Exception e)
            {
                // An aborted merge returns without an exception; this one failed (a full disk, say). The writer
                // keeps its segments as they were and asks again later.
                failed(e);
                Thread.Sleep(250); // not in a tight loop
            }
            finally
            {
                // A finished merge may make the writer register more (the next tier up) without asking the scheduler
                // again: they are taken here, as ConcurrentMergeScheduler's threads take them, or they would wait for
                // the next request (and IndexWriter.WaitForMerges would wait for them for ever).
                List<MergePolicy.OneMerge> more;
                try
                {
                    more = TakePending(writer);
                }
                catch (ObjectDisposedException)
                {
                    more = [];
                }
                lock (_gate)
                {
                    foreach (var m in more)
                        _queue.Enqueue(m);
                    _running = false;
                    Monitor.PulseAll(_gate);
                }
            }
        }
    }

    /// <summary>The writer's pending merges, which it counts as running from here: each must be run (or find itself aborted).</summary>
    private static List<MergePolicy.OneMerge> TakePending(IndexWriter writer)
    {
        var merges = new List<MergePolicy.OneMerge>();
        for (var m = writer.GetNextMerge(); m != null; m = writer.GetNextMerge())
            merges.Add(m);
        return merges;
    }

    protected override void Dispose(bool disposing)
    {
        Thread? thread;
        lock (_gate)
        {
            _disposed = true;
            thread = _thread;
            Monitor.PulseAll(_gate);
        }
        if (thread != null && thread != Thread.CurrentThread)
            thread.Join(); // the queued merges run (or return aborted) first: the writer waits for its running merges
    }

    public override object Clone() => new IndexMergeScheduler(indexName, failed);
}
