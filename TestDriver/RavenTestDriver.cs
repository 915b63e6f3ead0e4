using RavenLite.Server.Configuration;
using System.Text.Json;
using Microsoft.AspNetCore.Builder;
using RavenLite.Client;
using RavenLite.Client.Operations;
using RavenLite.Server.Hosting;

namespace RavenLite.TestDriver;

/// <summary>
/// An in-process RavenLite server for tests: real Kestrel on 127.0.0.1 (a free port), data in a
/// fresh temp directory that is deleted on dispose. <see cref="GetDocumentStoreAsync"/> hands out
/// initialized stores, each on a new empty database. Use one driver per test class (or fixture):
/// <code>
/// await using var driver = await RavenTestDriver.StartAsync();
/// using var store = await driver.GetDocumentStoreAsync();
/// </code>
/// </summary>
public sealed class RavenTestDriver : IAsyncDisposable, IDisposable
{
    private readonly WebApplication _app;
    private readonly string _dataDir;
    private readonly List<DocumentStore> _stores = [];
    private readonly object _lock = new();
    private int _databases;
    private bool _disposed;

    private RavenTestDriver(WebApplication app, string dataDir)
    {
        _app = app;
        _dataDir = dataDir;
        Url = new Uri(ServerHost.Addresses(app)[0]);
    }

    /// <summary>The server's base URL.</summary>
    public Uri Url { get; }

    /// <summary>The server's data directory.</summary>
    public string DataDirectory => _dataDir;

    /// <summary>Starts a server; <paramref name="configure"/> may change its options (limits, durability).</summary>
    public static async Task<RavenTestDriver> StartAsync(Action<ServerOptions>? configure = null, CancellationToken cancellationToken = default)
    {
        string dir = Path.Combine(Path.GetTempPath(), "ravenlite-testdriver-" + Guid.NewGuid().ToString("N"));
        Directory.CreateDirectory(dir);
        var app = ServerHost.Build(["--DataDir", dir, "--ServerUrl", "http://127.0.0.1:0", "--Logging:LogLevel:Default", "Warning"], configure);
        await app.StartAsync(cancellationToken).ConfigureAwait(false);
        return new RavenTestDriver(app, dir);
    }

    /// <summary>Creates a new database (<paramref name="database"/> or a unique name) and returns an initialized store for it, disposed with the driver.</summary>
    public async Task<IDocumentStore> GetDocumentStoreAsync(string? database = null, Action<DocumentStore>? configure = null, CancellationToken cancellationToken = default)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        database ??= "test-" + Interlocked.Increment(ref _databases);
        var store = new DocumentStore { Urls = [Url.ToString().TrimEnd('/')], Database = database };
        configure?.Invoke(store);
        store.Initialize();
        await store.Maintenance.Server.SendAsync(new CreateDatabaseOperation(database), cancellationToken).ConfigureAwait(false);
        lock (_lock)
            _stores.Add(store);
        return store;
    }

    /// <summary>Synchronous <see cref="GetDocumentStoreAsync"/>.</summary>
    public IDocumentStore GetDocumentStore(string? database = null) => GetDocumentStoreAsync(database).GetAwaiter().GetResult();

    /// <summary>Waits until no index of the store's database is stale (at most <paramref name="timeout"/>, default 30 s).</summary>
    /// <exception cref="TimeoutException">an index was still stale at the deadline.</exception>
    public async Task WaitForIndexingAsync(IDocumentStore store, TimeSpan? timeout = null, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(store);
        var deadline = DateTime.UtcNow + (timeout ?? TimeSpan.FromSeconds(30));
        using var http = new HttpClient { BaseAddress = Url };
        while (true)
        {
            string json = await http.GetStringAsync($"/databases/{Uri.EscapeDataString(store.Database!)}/indexes/stats", cancellationToken).ConfigureAwait(false);
            using var doc = JsonDocument.Parse(json);
            var stale = doc.RootElement.GetProperty("Results").EnumerateArray()
                .Where(i => i.TryGetProperty("IsStale", out var s) && s.ValueKind == JsonValueKind.True)
                .Select(i => i.GetProperty("Name").GetString()).ToList();
            if (stale.Count == 0)
                return;
            if (DateTime.UtcNow > deadline)
                throw new TimeoutException($"Indexes still stale after {(timeout ?? TimeSpan.FromSeconds(30)).TotalSeconds:0.#} s: {string.Join(", ", stale)}.");
            await Task.Delay(25, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Synchronous <see cref="WaitForIndexingAsync"/>.</summary>
    public void WaitForIndexing(IDocumentStore store, TimeSpan? timeout = null) => WaitForIndexingAsync(store, timeout).GetAwaiter().GetResult();

    /// <summary>Disposes the stores, stops the server (flushing every database) and deletes the data directory.</summary>
    public async ValueTask DisposeAsync()
    {
        if (_disposed)
            return;
        _disposed = true;
        lock (_lock)
        {
            foreach (var s in _stores)
                s.Dispose();
            _stores.Clear();
        }
        await _app.StopAsync().ConfigureAwait(false);
        await _app.DisposeAsync().ConfigureAwait(false);
        try
        {
            Directory.Delete(_dataDir, recursive: true);
        }
        catch (IOException)
        {
            // Best effort: a temp directory left behind is harmless.
        }
    }

    /// <summary>Synchronous <see cref="DisposeAsync"/>.</summary>
    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();
}
