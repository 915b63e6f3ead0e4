using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary>An operation on one database (indexes, statistics), sent through <see cref="MaintenanceOperationExecutor"/>.</summary>
/// <typeparam name="TResult">What it returns.</typeparam>
public interface IMaintenanceOperation<TResult>
{
    /// <summary>The command that performs it.</summary>
    RavenCommand<TResult> GetCommand(DocumentConventions conventions);
}
