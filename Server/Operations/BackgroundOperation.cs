using RavenLite.Server.Databases;

namespace RavenLite.Server.Operations;

/// <summary>
/// A database operation that runs in the background while the caller answers its id at once (patch and delete by
/// query, revert): the database is held until it ends, its state says how it ended — completed, canceled or faulted
/// with the failure's RavenDB type and status — and it is never left in progress.
/// </summary>
public static class BackgroundOperation
{
    /// <summary>Starts <paramref name="work"/> as operation <paramref name="kind"/>; <paramref name="done"/> runs at the end, however it ends.</summary>
    /// <exception cref="UnavailableException">The database is closing.</exception>
    public static OperationState Start(Database db, string kind, Func<OperationState, Task> work, Action? done = null)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(work);
        if (!db.TryAcquire())
            throw new UnavailableException(RavenExceptionTypes.DatabaseLoadFailure, $"Database '{db.Name}' is closing.");
        var state = db.Operations.Start(db.Operations.NextId(), kind);
        _ = Task.Run(async () =>
        {
            try
            {
                await work(state).ConfigureAwait(false);
                state.Complete();
            }
            catch (OperationCanceledException)
            {
                state.Fault(RavenExceptionTypes.RavenException, $"Operation {state.Id} was canceled.", 400);
            }
            catch (DomainException e)
            {
                state.Fault(e.ClientType, e.Message, ErrorMapping.StatusOf(e));
            }
            catch (PatchException e)
            {
                state.Fault(RavenExceptionTypes.JavaScript, e.Message, 400);
            }
            catch (Exception e)
            {
                // Anything else (a timeout, a failed storage, a database closing) faults the operation: it never stays InProgress.
                state.Fault(RavenExceptionTypes.RavenException, e.Message, e is TimeoutException ? 408 : 500);
            }
            finally
            {
                done?.Invoke();
                db.Operations.Finished(state);
                db.Release();
            }
        });
        return state;
    }
}
