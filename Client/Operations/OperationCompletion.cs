using System.Text.Json.Nodes;
using RavenLite.Client.Commands;

namespace RavenLite.Client.Operations;

/// <summary>Waits for a server operation (a revert, a patch by query) to finish.</summary>
public static class OperationCompletion
{
    /// <summary>Polls the server-wide <c>/operations/state</c> (a restore) until the operation ends; throws when it faulted.</summary>
    public static Task<JsonObject> WaitForServerOperationAsync(IDocumentStore store, long operationId, CancellationToken cancellationToken = default) =>
        WaitAsync(store, new GetOperationStateCommand(operationId, serverWide: true), null, operationId, cancellationToken);

    /// <summary>Polls <c>/operations/state</c> until the operation is no longer in progress; throws when it faulted.</summary>
    public static async Task<JsonObject> WaitForCompletionAsync(IDocumentStore store, long operationId, string? database = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(store);
        string db = database ?? store.Database ?? throw new InvalidOperationException("No database.");
        return await WaitAsync(store, new GetOperationStateCommand(operationId), db, operationId, cancellationToken).ConfigureAwait(false);
    }

    private static async Task<JsonObject> WaitAsync(IDocumentStore store, GetOperationStateCommand command, string? db, long operationId, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(store);
        var executor = ((DocumentStore)store).Executor;
        while (true)
        {
            var state = await executor.ExecuteAsync(command, db, cancellationToken).ConfigureAwait(false)
                ?? throw new Exceptions.RavenException($"Operation {operationId} is unknown to the server.");
            string? status = (string?)state["Status"];
            if (status == "Faulted")
                throw new Exceptions.RavenException($"Operation {operationId} failed: {(string?)state["Result"]?["Message"]}");
            if (status != "InProgress")
                return state;
            await Task.Delay(50, cancellationToken).ConfigureAwait(false);
        }
    }
}
