namespace RavenLite.Client.Operations;

/// <summary>Sends <see cref="IServerOperation{TResult}"/>s: <c>store.Maintenance.Server.SendAsync(new CreateDatabaseOperation("Shop"))</c>.</summary>
public sealed class ServerOperationExecutor
{
    private readonly DocumentStore _store;

    internal ServerOperationExecutor(DocumentStore store) => _store = store;

    /// <summary>Sends <paramref name="operation"/> and returns its result.</summary>
    public Task<TResult> SendAsync<TResult>(IServerOperation<TResult> operation, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operation);
        _store.ThrowIfNotInitialized();
        return _store.Executor.ExecuteAsync(operation.GetCommand(_store.Conventions), null, cancellationToken);
    }

    /// <summary>Synchronous <see cref="SendAsync{TResult}"/>.</summary>
    public TResult Send<TResult>(IServerOperation<TResult> operation) => SendAsync(operation).GetAwaiter().GetResult();
}
