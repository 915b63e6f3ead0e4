using Microsoft.AspNetCore.Builder;
using RavenLite.Client;
using RavenLite.Client.Operations;
using RavenLite.Server.Hosting;

namespace RavenLite.Embedded;

/// <summary>
/// RavenLite inside the application's process, the way RavenDB.Embedded runs RavenDB: the whole server (Kestrel on
/// <see cref="EmbeddedServerOptions.ServerUrl"/>, the Studio, every endpoint) on a data directory in the standalone
/// server's format.
/// <code>
/// EmbeddedServer.Instance.StartServer(new EmbeddedServerOptions { DataDirectory = "data" });
/// using var store = EmbeddedServer.Instance.GetDocumentStore("Shop");
/// </code>
/// Stopping — <see cref="Dispose"/>, or the process exiting normally — closes every database, so the journal is synced
/// and flushed; what a 2xx acknowledged was already durable (<see cref="EmbeddedServerOptions.Durability"/>).
/// </summary>
public sealed class EmbeddedServer : IDisposable, IAsyncDisposable
{
    private readonly object _lock = new();
    private readonly List<IDocumentStore> _stores = [];
    private WebApplication? _app;

    /// <summary>The process's embedded server (RavenDB.Embedded's <c>EmbeddedServer.Instance</c>); more can be made with <c>new</c>.</summary>
    public static EmbeddedServer Instance { get; } = new();

    /// <summary>The address the server answers on (its port resolved), once started.</summary>
    public Uri ServerUri => _app is { } app ? new Uri(ServerHost.Addresses(app)[0]) : throw NotStarted();

    /// <summary>The data directory, once started.</summary>
    public string DataDirectory { get; private set; } = "";

    /// <summary>Starts the server; throws <see cref="InvalidOperationException"/> when it runs already or a setting is invalid.</summary>
    public void StartServer(EmbeddedServerOptions? options = null) => StartServerAsync(options).GetAwaiter().GetResult();

    /// <inheritdoc cref="StartServer"/>
    public async Task StartServerAsync(EmbeddedServerOptions? options = null, CancellationToken cancellationToken = default)
    {
        options ??= new EmbeddedServerOptions();
        string dataDirectory = Path.GetFullPath(options.DataDirectory);
        var app = ServerHost.Build(["--DataDir", dataDirectory, "--ServerUrl", options.ServerUrl, "--Logging:LogLevel:Default", options.LogLevel.ToString()], server =>
        {
            server.Durability = options.Durability;
            server.Studio = options.ServeStudio;
            if (options.CertificatePath is { } certificate)
            {
                server.Security.Certificate.Path = Path.GetFullPath(certificate);
                server.Security.Certificate.Password = options.CertificatePassword;
            }
            options.Configure?.Invoke(server);
        });
        bool running;
        lock (_lock)
        {
            running = _app != null;
            if (!running)
                _app = app;
        }
        if (running)
        {
            await app.DisposeAsync().ConfigureAwait(false);
            throw new InvalidOperationException("The embedded server is running already; dispose it before starting it again.");
        }
        try
        {
            await app.StartAsync(cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            lock (_lock)
                _app = null;
            await app.DisposeAsync().ConfigureAwait(false);
            throw;
        }
        DataDirectory = dataDirectory;
        AppDomain.CurrentDomain.ProcessExit += OnProcessExit;
    }

    /// <summary>An initialized store for <paramref name="database"/>, creating the database when it does not exist; disposed with the server.</summary>
    public IDocumentStore GetDocumentStore(string database) => GetDocumentStoreAsync(database).GetAwaiter().GetResult();

    /// <inheritdoc cref="GetDocumentStore"/>
    public async Task<IDocumentStore> GetDocumentStoreAsync(string database, CancellationToken cancellationToken = default)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(database);
        var store = new DocumentStore { Urls = [ServerUri.ToString().TrimEnd('/')], Database = database };
        store.Initialize();
        try
        {
            await store.Maintenance.Server.SendAsync(new CreateDatabaseOperation(database), cancellationToken).ConfigureAwait(false);
        }
        catch (Client.Exceptions.ConcurrencyException)
        {
            // it exists already: a data directory opened again
        }
        catch
        {
            store.Dispose();
            throw;
        }
        lock (_lock)
            _stores.Add(store);
        return store;
    }

    /// <summary>Disposes the stores handed out and stops the server (every database closed: journal synced, data flushed).</summary>
    public async ValueTask DisposeAsync()
    {
        WebApplication? app;
        List<IDocumentStore> stores;
        lock (_lock)
        {
            (app, _app) = (_app, null);
            stores = [.. _stores];
            _stores.Clear();
        }
        if (app == null)
            return;
        AppDomain.CurrentDomain.ProcessExit -= OnProcessExit;
        foreach (var store in stores)
            store.Dispose();
        await app.StopAsync().ConfigureAwait(false);
        await app.DisposeAsync().ConfigureAwait(false);
    }

    /// <inheritdoc cref="DisposeAsync"/>
    public void Dispose() => DisposeAsync().AsTask().GetAwaiter().GetResult();

    // An application that never disposes the server still closes its databases when the process ends normally.
    private void OnProcessExit(object? sender, EventArgs e) => Dispose();

    private static InvalidOperationException NotStarted() => new("The embedded server is not started: call StartServer first.");
}
