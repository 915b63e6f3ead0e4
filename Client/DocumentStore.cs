using System.Collections.Concurrent;
using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using RavenLite.Client.BulkInsert;
using RavenLite.Client.Http;
using RavenLite.Client.Identity;
using RavenLite.Client.Operations;
using RavenLite.Client.Session;

namespace RavenLite.Client;

/// <summary>
/// The client's entry point, like RavenDB's: set <see cref="Urls"/>, <see cref="Database"/> and
/// <see cref="Conventions"/>, call <see cref="Initialize"/> once, keep it for the application's
/// lifetime and open short sessions from it. Thread-safe after initialization. Holds the HTTP
/// connection pool and the HiLo id ranges; <see cref="Dispose"/> returns unused ranges and closes connections.
/// </summary>
public sealed class DocumentStore : IDocumentStore
{
    private readonly ConcurrentDictionary<(string Database, string Tag), HiLoIdGenerator> _hilo = new();
    private RequestExecutor? _executor;
    private IReadOnlyList<string> _urls = [];
    private string? _database;
    private bool _disposed;
    private X509Certificate2? _certificate;
    private RemoteCertificateValidationCallback? _serverValidation;

    /// <inheritdoc />
    public IReadOnlyList<string> Urls
    {
        get => _urls;
        set
        {
            ThrowIfInitialized();
            _urls = value ?? throw new ArgumentNullException(nameof(value));
        }
    }

    /// <inheritdoc />
    public string? Database
    {
        get => _database;
        set
        {
            ThrowIfInitialized();
            _database = value;
        }
    }

    /// <inheritdoc />
    public DocumentConventions Conventions { get; } = new();

    /// <summary>
    /// The client certificate (with its private key) this store authenticates with to a secured server; the URLs must
    /// then be https. Used for HTTP requests and for subscription connections.
    /// </summary>
    public X509Certificate2? Certificate
    {
        get => _certificate;
        set
        {
            ThrowIfInitialized();
            _certificate = value;
        }
    }

    /// <summary>
    /// Decides whether the server's certificate is trusted (for a server whose certificate comes from a private CA);
    /// null: the operating system's trust store decides.
    /// </summary>
    public RemoteCertificateValidationCallback? ServerCertificateValidation
    {
        get => _serverValidation;
        set
        {
            ThrowIfInitialized();
            _serverValidation = value;
        }
    }

    /// <inheritdoc />
    public MaintenanceOperationExecutor Maintenance { get; private set; } = null!;

    internal RequestExecutor Executor => _executor ?? throw new InvalidOperationException("Call DocumentStore.Initialize() first.");

    /// <summary>Validates the settings, freezes the conventions and creates the connection pool. Returns this store.</summary>
    /// <exception cref="InvalidOperationException">no URL, or a URL that is not absolute http(s).</exception>
    public DocumentStore Initialize()
    {
        ThrowIfInitialized();
        if (_urls.Count == 0)
            throw new InvalidOperationException("DocumentStore.Urls is empty: set at least one server URL, for example http://127.0.0.1:8080.");
        var urls = new List<Uri>();
        foreach (string text in _urls)
        {
            if (!Uri.TryCreate(text, UriKind.Absolute, out var url) || url.Scheme is not ("http" or "https"))
                throw new InvalidOperationException($"'{text}' is not an absolute http(s) URL.");
            if (_certificate != null && url.Scheme != "https")
                throw new InvalidOperationException($"'{text}' is plain HTTP, but a client certificate is set: a secured server is reached over https.");
            urls.Add(url);
        }
        if (_certificate is { HasPrivateKey: false })
            throw new InvalidOperationException($"The client certificate {_certificate.Subject} has no private key: load it from a PFX (or PEM with its key).");
        Conventions.Freeze();
        _executor = new RequestExecutor(urls, Conventions.RequestTimeout, Conventions, _certificate, _serverValidation);
        Maintenance = new MaintenanceOperationExecutor(this, null);
        return this;
    }

    /// <inheritdoc />
    public IAsyncDocumentSession OpenAsyncSession(string? database = null) => OpenAsyncSession(new SessionOptions { Database = database });

    /// <inheritdoc />
    public IAsyncDocumentSession OpenAsyncSession(SessionOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        ThrowIfNotInitialized();
        return new AsyncDocumentSession(this, ResolveDatabase(options.Database), options.TransactionMode);
    }

    /// <inheritdoc />
    public IDocumentSession OpenSession(string? database = null) => new DocumentSession((AsyncDocumentSession)OpenAsyncSession(database));

    /// <inheritdoc />
    public IDocumentSession OpenSession(SessionOptions options) => new DocumentSession((AsyncDocumentSession)OpenAsyncSession(options));

    /// <inheritdoc />
    public BulkInsertOperation BulkInsert(string? database = null, BulkInsertOptions? options = null, CancellationToken cancellationToken = default)
    {
        ThrowIfNotInitialized();
        return new BulkInsertOperation(this, ResolveDatabase(database), options ?? new BulkInsertOptions(), cancellationToken);
    }

    /// <summary>A new id for <paramref name="entity"/> in <paramref name="database"/>: from <see cref="DocumentConventions.DocumentIdGenerator"/>, else <c>{collection prefix}/{n}-A</c> from a HiLo range.</summary>
    public Task<string> GenerateDocumentIdAsync(string database, object entity, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(entity);
        ThrowIfNotInitialized();
        if (Conventions.DocumentIdGenerator is { } custom)
            return custom(database, entity, cancellationToken);
        string tag = Conventions.TransformCollectionNameToDocumentIdPrefix(Conventions.FindCollectionName(entity.GetType()));
        var generator = _hilo.GetOrAdd((database, tag), k => new HiLoIdGenerator(k.Tag, k.Database, Executor, Conventions.IdentityPartsSeparator));
        return generator.NextIdAsync(cancellationToken);
    }

    internal string ResolveDatabase(string? database) =>
        database ?? _database ?? throw new InvalidOperationException("No database: set DocumentStore.Database or pass one to OpenAsyncSession/BulkInsert.");

    internal void ThrowIfNotInitialized()
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        if (_executor == null)
            throw new InvalidOperationException("Call DocumentStore.Initialize() first.");
    }

    private void ThrowIfInitialized()
    {
        if (_executor != null)
            throw new InvalidOperationException("The store is initialized; its settings can no longer change.");
    }

    /// <summary>Export and import of the store's database as a <c>.ravendbdump</c>.</summary>
    public Smuggler.DatabaseSmuggler Smuggler => _smuggler ??= new Smuggler.DatabaseSmuggler(this);

    private Smuggler.DatabaseSmuggler? _smuggler;

    /// <summary>Data subscriptions of the store's database (definitions, workers).</summary>
    public Subscriptions.DocumentSubscriptions Subscriptions => _subscriptions ??= new Subscriptions.DocumentSubscriptions(this);

    private Subscriptions.DocumentSubscriptions? _subscriptions;

    /// <summary>The changes API of <paramref name="database"/> (default: the store's): a new connection; dispose it when done.</summary>
    public Changes.DatabaseChanges Changes(string? database = null)
    {
        ObjectDisposedException.ThrowIf(_disposed, this);
        string name = database ?? Database ?? throw new InvalidOperationException("Set DocumentStore.Database or pass a database.");
        var executor = Executor;
        return new Changes.DatabaseChanges(() => executor.NodesOf(name), name);
    }

    /// <summary>Returns unused HiLo ranges (best effort) and closes the connection pool.</summary>
    public void Dispose()
    {
        if (_disposed)
            return;
        _disposed = true;
        if (_executor == null)
            return;
        foreach (var g in _hilo.Values)
        {
            try
            {
                g.ReturnUnusedAsync(CancellationToken.None).GetAwaiter().GetResult();
            }
            catch (Exception e) when (e is Exceptions.RavenException or HttpRequestException or TaskCanceledException)
            {
                // Best effort: an unreturned range only leaves a gap in the numbering.
            }
            g.Dispose();
        }
        _executor.Dispose();
    }
}
