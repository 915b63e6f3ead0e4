using RavenLite.Client.BulkInsert;
using RavenLite.Client.Operations;
using RavenLite.Client.Session;

namespace RavenLite.Client;

/// <summary>The entry point of the client: one per application, thread-safe. See <see cref="DocumentStore"/>.</summary>
public interface IDocumentStore : IDisposable
{
    /// <summary>Export and import of the store's database as a <c>.ravendbdump</c>.</summary>
    Smuggler.DatabaseSmuggler Smuggler { get; }

    /// <summary>Data subscriptions of the store's database (definitions, workers).</summary>
    Subscriptions.DocumentSubscriptions Subscriptions { get; }

    /// <summary>The changes API of <paramref name="database"/> (default: the store's): a new WebSocket connection; dispose it when done.</summary>
    Changes.DatabaseChanges Changes(string? database = null);

    /// <summary>Server URLs (the first one is used).</summary>
    IReadOnlyList<string> Urls { get; }

    /// <summary>Default database of sessions and operations.</summary>
    string? Database { get; }

    /// <summary>Conventions (frozen after initialization).</summary>
    DocumentConventions Conventions { get; }

    /// <summary>Database and server operations.</summary>
    MaintenanceOperationExecutor Maintenance { get; }

    /// <summary>Opens a unit-of-work session on the default database (or <paramref name="database"/>).</summary>
    IAsyncDocumentSession OpenAsyncSession(string? database = null);

    /// <summary>Opens an async session with options (database, cluster-wide transaction mode).</summary>
    IAsyncDocumentSession OpenAsyncSession(SessionOptions options);

    /// <summary>Opens a synchronous session on the default database (or <paramref name="database"/>).</summary>
    IDocumentSession OpenSession(string? database = null);

    /// <summary>Opens a synchronous session with options.</summary>
    IDocumentSession OpenSession(SessionOptions options);

    /// <summary>Starts a streaming bulk insert into the default database (or <paramref name="database"/>).</summary>
    BulkInsertOperation BulkInsert(string? database = null, BulkInsertOptions? options = null, CancellationToken cancellationToken = default);
}
