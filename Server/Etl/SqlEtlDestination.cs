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

    private async Task LoadAsync(SqlEtlPlan plan, CancellationToken cancellation)
    {
        if (plan.IsEmpty)
            return;
        try
        {
            await using var connection = await _source.OpenConnectionAsync(cancellation).ConfigureAwait(false);
            await using var transaction = await connection.BeginTransactionAsync(cancellation).ConfigureAwait(false);
            await RunAsync(connection, plan, cancellation).ConfigureAwait(false);
            await transaction.CommitAsync(cancellation).ConfigureAwait(false);
        }
        catch (Exception e) when (e is NpgsqlException or InvalidOperationException or IOException or TimeoutException)
        {
            throw new EtlLoadException($"PostgreSQL did not take the batch: {e.Message}", e);
        }
    }

    /// <summary>Runs the plan on an open transaction of <paramref name="connection"/> (the test endpoint rolls it back).</summary>
    internal static async Task RunAsync(NpgsqlConnection connection, SqlEtlPlan plan, CancellationToken cancellation)
    {
        foreach (var d in plan.Deletes())
        {
            await using var command = new NpgsqlCommand(d.Text, connection);
            foreach (var (name, value) in d.Parameters)
                command.Parameters.AddWithValue(name, value ?? DBNull.Value);
            await command.ExecuteNonQueryAsync(cancellation).ConfigureAwait(false);
        }
        // Synchronous on a pool thread: the text writer's dispose (which ends the COPY) reads the server's answer
        // synchronously, and after an await this method may be running on the socket engine's own thread.
        await Task.Run(() =>
        {
            foreach (var c in plan.Copies())
            {
                using var writer = connection.BeginTextImport(c.Text);
                c.WriteTo(writer);
            }
        }, cancellation).ConfigureAwait(false);
    }

    /// <summary>A connection to run a plan on (the test endpoint's rolled-back run).</summary>
    internal ValueTask<NpgsqlConnection> OpenAsync(CancellationToken cancellation) => _source.OpenConnectionAsync(cancellation);

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
