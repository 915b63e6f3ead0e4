namespace RavenLite.Client.Operations;

/// <summary>Sends <see cref="IMaintenanceOperation{TResult}"/>s to one database: <c>store.Maintenance.SendAsync(new GetStatisticsOperation())</c>.</summary>
public sealed class MaintenanceOperationExecutor
{
    private readonly DocumentStore _store;
    private readonly string? _database;

    internal MaintenanceOperationExecutor(DocumentStore store, string? database)
    {
        _store = store;
        _database = database;
        Server = new ServerOperationExecutor(store);
    }

    /// <summary>Server-wide operations (create, delete and list databases).</summary>
    public ServerOperationExecutor Server { get; }

    /// <summary>The same executor against another database.</summary>
    public MaintenanceOperationExecutor ForDatabase(string database) => new(_store, database);

    /// <summary>Sends <paramref name="operation"/> and returns its result.</summary>
    public Task<TResult> SendAsync<TResult>(IMaintenanceOperation<TResult> operation, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operation);
        _store.ThrowIfNotInitialized();
        return _store.Executor.ExecuteAsync(operation.GetCommand(_store.Conventions), _database ?? _store.Database, cancellationToken);
    }

    /// <summary>Synchronous <see cref="SendAsync{TResult}"/>.</summary>
    public TResult Send<TResult>(IMaintenanceOperation<TResult> operation) => SendAsync(operation).GetAwaiter().GetResult();
}
