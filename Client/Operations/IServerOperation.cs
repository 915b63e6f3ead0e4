using RavenLite.Client.Http;

namespace RavenLite.Client.Operations;

/// <summary>A server-wide operation (databases), sent through <see cref="ServerOperationExecutor"/>.</summary>
/// <typeparam name="TResult">What it returns.</typeparam>
public interface IServerOperation<TResult>
{
    /// <summary>The command that performs it.</summary>
    RavenCommand<TResult> GetCommand(DocumentConventions conventions);
}
