namespace RavenLite.Client.Http;

/// <summary>
/// A node that a request could not reach (or that answered it was unavailable) is asked again in the background —
/// after 100 ms, then at doubling intervals up to 5 s — until it answers; then its <see cref="NodeSelector"/> prefers it
/// again if the topology lists it before the node preferred meanwhile, as RavenDB's clients go back to a recovered node.
/// One check per node and database at a time; all end when the store is disposed.
/// </summary>
internal sealed class NodeHealthChecks(HttpClient http) : IDisposable
{
    private static readonly TimeSpan First = TimeSpan.FromMilliseconds(100), Longest = TimeSpan.FromSeconds(5);
    private readonly System.Collections.Concurrent.ConcurrentDictionary<string, byte> _running = new(StringComparer.Ordinal);
    private readonly CancellationTokenSource _closing = new();

    /// <summary>Starts checking <paramref name="node"/> for <paramref name="database"/> (null: the server itself) unless a check runs already.</summary>
    public void Watch(string? database, NodeSelector selector, Uri node)
    {
        if (selector.Nodes.Count < 2 || _closing.IsCancellationRequested)
            return;
        string key = (database ?? "") + "\n" + node.GetLeftPart(UriPartial.Authority);
        if (_running.TryAdd(key, 0))
            _ = Task.Run(() => CheckUntilBackAsync(key, database, selector, node));
    }

    private async Task CheckUntilBackAsync(string key, string? database, NodeSelector selector, Uri node)
    {
        var probe = new Uri(node, database == null ? "/build/version" : $"/databases/{Uri.EscapeDataString(database)}/stats");
        var delay = First;
        try
        {
            while (true)
            {
                await Task.Delay(delay, _closing.Token).ConfigureAwait(false);
                try
                {
                    using var response = await http.GetAsync(probe, _closing.Token).ConfigureAwait(false);
                    if (response.IsSuccessStatusCode)
                    {
                        selector.Restored(node);
                        return;
                    }
                }
                catch (Exception e) when (e is HttpRequestException || (e is TaskCanceledException && !_closing.IsCancellationRequested))
                {
                    // still down
                }
                delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, Longest.Ticks));
            }
        }
        catch (OperationCanceledException)
        {
            // the store is closing
        }
        finally
        {
            _running.TryRemove(key, out _);
        }
    }

    public void Dispose()
    {
        _closing.Cancel();
        _closing.Dispose();
    }
}
