using Npgsql;
using RavenLite.Server.Documents;
using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Etl;

/// <summary>
/// SQL ETL's loader into PostgreSQL (docs/etl.md "SQL ETL"): a batch's <see cref="SqlEtlPlan"/> runs in one
/// transaction — committed whole or, on any error, not at all (the batch is retried from the same position).
/// </summary>
internal sealed class SqlEtlDestination : IEtlDestination
{
    private readonly EtlTask _task;
    private readonly DocumentsStorage _documents;
    private readonly NpgsqlDataSource _source;

    public SqlEtlDestination(EtlTask task, SqlConnectionString connection, DocumentsStorage documents)
    {
        _task = task;
        _documents = documents;
        var builder = new NpgsqlConnectionStringBuilder(connection.ConnectionString);
        if (task.CommandTimeout is { } timeout)
            builder.CommandTimeout = timeout;
        _source = NpgsqlDataSource.Create(builder);
    }

    public IEtlBatch NewBatch(Transaction tx) => new Batch(this, tx);

    /// <summary>A batch's plan: each change's rows written as COPY text as it is added (its attachments read from the batch's snapshot).</summary>
    private sealed class Batch(SqlEtlDestination destination, Transaction tx) : IEtlBatch
    {
        private readonly SqlEtlPlan _plan = new(destination._task);

        public int Count { get; private set; }

        public void Add(EtlItem item)
        {
            _plan.Add(item, a => Attachment(destination._documents, tx, a));
            Count++;
        }

        public Task LoadAsync(CancellationToken cancellation) => destination.LoadAsync(_plan, cancellation);

        public void Dispose() => _plan.Dispose();
    }

    /// <summary>
    /// The batch's transaction, on a thread of its own: the statements run synchronously there, so no step of a load
    /// waits for a pool thread while the scripts of the next batch keep the pool's threads busy.
    /// </summary>
    private Task LoadAsync(SqlEtlPlan plan, CancellationToken cancellation) =>
        plan.IsEmpty ? Task.CompletedTask : OnOwnThread(() => Load(plan, cancellation), cancellation);

    /// <summary>Runs the plan and rolls it back (the test endpoint): PostgreSQL checks every statement, nothing is kept.</summary>
    internal Task RunRolledBackAsync(SqlEtlPlan plan, CancellationToken cancellation) => OnOwnThread(() =>
    {
        using var connection = _source.OpenConnection();
        using var transaction = connection.BeginTransaction();
        Run(connection, plan, cancellation);
        transaction.Rollback();
    }, cancellation);

    private static Task OnOwnThread(Action work, CancellationToken cancellation) =>
        Task.Factory.StartNew(work, cancellation, TaskCreationOptions.LongRunning, TaskScheduler.Default);

    private void Load(SqlEtlPlan plan, CancellationToken cancellation)
    {
        try
        {
            cancellation.ThrowIfCancellationRequested();
            using var connection = _source.OpenConnection();
            using var transaction = connection.BeginTransaction();
            Run(connection, plan, cancellation);
            transaction.Commit();
        }
        catch (Exception e) when (e is NpgsqlException or InvalidOperationException or IOException or TimeoutException)
        {
            cancellation.ThrowIfCancellationRequested();
            throw new EtlLoadException($"PostgreSQL did not take the batch: {e.Message}", e);
        }
    }

    /// <summary>
    /// Runs the plan on an open transaction of <paramref name="connection"/> (the test endpoint rolls it back). A stop
    /// cancels a delete that is running (the transaction then rolls back; the batch is read again on the next start);
    /// a COPY is bounded by the connection's timeouts.
    /// </summary>
    internal static void Run(NpgsqlConnection connection, SqlEtlPlan plan, CancellationToken cancellation)
    {
        var deletes = plan.Deletes();
        if (deletes.Count > 0)
        {
            // A delete by thousands of ids is planned from the id column's statistics; a table filled faster than
            // autovacuum analyzes it has none, and PostgreSQL then scans the whole table on every batch. The id columns
            // are meant to be indexed (docs/etl.md), so the batch's transaction plans its deletes without sequential scans
            // (a column without an index is still scanned: the setting only makes a scan the last resort).
            using var planning = new NpgsqlCommand("SET LOCAL enable_seqscan = off", connection);
            planning.ExecuteNonQuery();
        }
        foreach (var d in deletes)
        {
            using var command = new NpgsqlCommand(d.Text, connection);
            foreach (var (name, value) in d.Parameters)
                command.Parameters.AddWithValue(name, value ?? DBNull.Value);
            using var stop = cancellation.Register(command.Cancel);
            command.ExecuteNonQuery();
        }
        foreach (var c in plan.Copies())
        {
            using var writer = connection.BeginTextImport(c.Text);
            c.WriteTo(writer);
        }
    }

    /// <summary>The content of an attachment of a source document, read from the batch's snapshot.</summary>
    internal static byte[]? Attachment(DocumentsStorage documents, Transaction tx, EtlLoad.AttachmentContent a)
    {
        if (documents.Get(tx, a.DocumentId) is not { } doc || DocumentExtras.Read(doc.Json)?.Attachments.GetValueOrDefault(a.Name) is not { } info
            || Attachments.AttachmentsStore.Find(tx, info.Hash) is not { } content)
            return null;
        using var bytes = new MemoryStream();
        Attachments.AttachmentsStore.CopyToAsync(tx, content.ContentId, 0, content.Size, bytes, CancellationToken.None).GetAwaiter().GetResult();
        return bytes.ToArray();
    }

    public void Dispose() => _source.Dispose();
}
