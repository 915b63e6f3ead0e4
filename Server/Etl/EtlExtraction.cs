using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Etl;

/// <summary>
/// A transformation's script run over the changes a batch reads (docs/etl.md "Running"): a chunk of changes is split
/// between up to <see cref="Threads"/> script engines, each on a pool thread with its own read transaction on the
/// batch's snapshot, while the batch's own thread goes on reading the next changes and adding the last chunk's results;
/// the results come back in etag order. When a script fails, the error is the one of the first failing change in etag
/// order.
/// </summary>
internal sealed class EtlExtraction : IDisposable
{
    /// <summary>Engines running at once: the machine's cores, at most two (the destination and the writers need the rest).</summary>
    public static readonly int Threads = Math.Clamp(Environment.ProcessorCount, 1, 2);

    private const int MinPerThread = 16; // below this a chunk runs on one engine: the hand-off costs more than it saves

    private readonly EtlTransformation _transformation;
    private readonly DocumentsStorage _documents;
    private readonly EtlScript[] _scripts;
    private readonly List<ReadTransaction> _twins = [];
    private readonly Storage.StorageEnvironment _environment;

    public EtlExtraction(EtlTask task, EtlTransformation transformation, Storage.StorageEnvironment environment, DocumentsStorage documents, TimeSpan batchTime)
    {
        _environment = environment;
        _transformation = transformation;
        _documents = documents;
        _scripts = transformation.Script.Trim().Length > 0
            ? [.. Enumerable.Range(0, Threads).Select(_ => new EtlScript(task, transformation, batchTime))]
            : [];
    }

    /// <summary>Starts a batch read in <paramref name="tx"/>: the scripts' time limit starts now; the engines read through transactions on its snapshot.</summary>
    public void BeginBatch(ReadTransaction tx)
    {
        foreach (var s in _scripts)
            s.BeginBatch();
        for (int k = 0; k < Threads; k++)
            _twins.Add(_environment.ReadTransaction(tx));
    }

    /// <summary>
    /// Starts running the scripts on <paramref name="changes"/>: the changes as the batch carries them, in their order
    /// (null for one not of the transformation's collections). One chunk runs at a time.
    /// </summary>
    public Task<EtlItem?[]> Start(List<EtagItem> changes)
    {
        int threads = _scripts.Length > 1 && changes.Count >= MinPerThread * 2 ? _scripts.Length : 1;
        return Task.Run(() =>
        {
            var items = new EtlItem?[changes.Count];
            if (threads == 1)
            {
                for (int i = 0; i < changes.Count; i++)
                    items[i] = Extract(changes[i], _twins[0], _scripts.Length > 0 ? _scripts[0] : null);
                return items;
            }
            var failures = new (int Index, EtlScriptException Error)?[threads];
            try
            {
                Parallel.For(0, threads, new ParallelOptions { MaxDegreeOfParallelism = threads }, k => RunPart(changes, items, failures, threads, k));
            }
            catch (AggregateException e) when (e.InnerExceptions.Count > 0)
            {
                System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(e.InnerExceptions[0]); // what failed, not the wrapper
            }
            if (failures.Where(f => f != null).OrderBy(f => f!.Value.Index).FirstOrDefault() is { } first)
                throw first.Error;
            return items;
        });
    }

    /// <summary>Part <paramref name="k"/> of <paramref name="threads"/>: a contiguous range, on that part's engine and transaction.</summary>
    private void RunPart(List<EtagItem> changes, EtlItem?[] items, (int Index, EtlScriptException Error)?[] failures, int threads, int k)
    {
        int start = changes.Count * k / threads, end = changes.Count * (k + 1) / threads;
        for (int i = start; i < end; i++)
        {
            try
            {
                items[i] = Extract(changes[i], _twins[k], _scripts[k]);
            }
            catch (EtlScriptException e)
            {
                failures[k] = (i, e);
                return;
            }
        }
    }

    /// <summary>Ends the batch's reading (no chunk may be running): the engines' transactions end, before the batch's own, as they must.</summary>
    public void EndBatch()
    {
        foreach (var twin in _twins)
            twin.Dispose();
        _twins.Clear();
    }

    private EtlItem? Extract(EtagItem change, Transaction tx, EtlScript? script)
    {
        if (change.Document is { } doc)
        {
            if (!_transformation.Covers(doc.Collection))
                return null;
            var loads = script != null ? script.Transform(doc, tx, _documents) : [EtlWholeDocument.Of(doc)];
            bool deletes = script == null || script.Deletes(doc.Id, doc.Collection, deleted: false, tx, _documents);
            return new EtlItem(doc.Id, doc.Collection, doc.Etag, Deleted: false, deletes, loads);
        }
        var tombstone = change.Tombstone!;
        if (!_transformation.Covers(tombstone.Collection))
            return null;
        bool delete = script == null || script.Deletes(tombstone.LowerId, tombstone.Collection, deleted: true, tx, _documents);
        return new EtlItem(tombstone.LowerId, tombstone.Collection, tombstone.Etag, Deleted: true, delete, []);
    }

    public void Dispose() => EndBatch();
}
