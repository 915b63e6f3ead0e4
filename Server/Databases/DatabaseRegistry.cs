using System.Text.RegularExpressions;
using RavenLite.Server.Configuration;
using RavenLite.Server.Logging;

namespace RavenLite.Server.Databases;

/// <summary>
/// Name → database (docs/architecture.md). Names are matched case-insensitively and kept in
/// the casing they were created with; a database lives in <c>{DataDir}/Databases/{lower-cased name}/</c>
/// with a <c>database.json</c> record holding the name. Databases open lazily on first use and close
/// on delete or shutdown. Thread-safe.
/// </summary>
public sealed partial class DatabaseRegistry : IDisposable
{
    /// <summary>Longest database name.</summary>
    public const int MaxNameLength = 128;
    private const string RecordFile = DatabaseRecordFile.FileName;

    private readonly ServerOptions _options;
    private readonly string _root;
    private readonly object _lock = new();
    private readonly Dictionary<string, string> _names = new(StringComparer.OrdinalIgnoreCase); // name -> stored casing
    private readonly Dictionary<string, Database> _open = new(StringComparer.OrdinalIgnoreCase);
    private readonly HashSet<string> _restoring = new(StringComparer.OrdinalIgnoreCase); // names a restore has reserved
    private readonly HashSet<string> _offline = new(StringComparer.OrdinalIgnoreCase); // databases being compacted
    // Databases closing for a reload: the next instance opens once the old one is closed (two over one folder would both write it).
    private readonly Dictionary<string, Task> _closing = new(StringComparer.OrdinalIgnoreCase);
    private const string StagingPrefix = ".restoring-";
    private readonly ILogger _logger;
    private bool _disposed;
    private long _raftIndex;

    /// <summary>Scans <c>{DataDir}/Databases</c> for existing databases (opening none).</summary>
    // How this server's replication senders reach their destinations (TLS with the server certificate when secured).
    private readonly Replication.IReplicationConnector _replicationConnector;

    private readonly Indexing.Analysis.CustomAnalysis? _serverAnalysis;

    /// <summary>The keys of encrypted databases.</summary>
    public DatabaseKeys Keys { get; }

    public DatabaseRegistry(ServerOptions options, ILogger<DatabaseRegistry> logger, Replication.IReplicationConnector? replicationConnector = null,
        Indexing.Analysis.CustomAnalysis? serverAnalysis = null, DatabaseKeys? keys = null)
    {
        _serverAnalysis = serverAnalysis;
        Keys = keys ?? new DatabaseKeys(options);
        _options = options;
        _logger = logger;
        _replicationConnector = replicationConnector ?? new Replication.PlainReplicationConnector();
        _root = Path.GetFullPath(Path.Combine(options.DataDir, "Databases"));
        System.IO.Directory.CreateDirectory(_root);
        foreach (string dir in System.IO.Directory.GetDirectories(_root))
        {
            if (Path.GetFileName(dir).StartsWith(StagingPrefix, StringComparison.Ordinal))
            {
                System.IO.Directory.Delete(dir, recursive: true); // a restore the server stopped in the middle of
                continue;
            }
            string recordPath = Path.Combine(dir, RecordFile);
            if (!File.Exists(recordPath))
                continue;
            try
            {
                string name = DatabaseRecordFile.Read(dir).DatabaseName;
                _names[name] = name;
            }
            catch (Exception e) when (e is JsonException or KeyNotFoundException or InvalidOperationException)
            {
                Log.SkippingDatabase(_logger, dir, e.Message);
            }
        }
    }

    /// <summary>Names of all databases, in creation casing, sorted.</summary>
    public IReadOnlyList<string> Names
    {
        get
        {
            lock (_lock)
                return _names.Values.OrderBy(n => n, StringComparer.OrdinalIgnoreCase).ToList();
        }
    }

    /// <summary>The databases open now (the dashboard's metrics read these, without opening the others).</summary>
    public IReadOnlyList<string> OpenNames
    {
        get
        {
            lock (_lock)
                return _open.Keys.OrderBy(n => n, StringComparer.OrdinalIgnoreCase).ToList();
        }
    }

    /// <summary>A counter standing in for RavenDB's raft index in lifecycle answers.</summary>
    public long NextRaftIndex() => Interlocked.Increment(ref _raftIndex);

    /// <summary>The stored casing of a database name, or null when it does not exist.</summary>
    public string? Find(string name)
    {
        lock (_lock)
            return _names.TryGetValue(name, out var n) ? n : null;
    }

    /// <summary>400 for names that are empty, too long, or not letters, digits, '_', '-', '.' (no leading '.').</summary>
    public static void ValidateName(string? name)
    {
        if (string.IsNullOrEmpty(name))
            throw new BadRequestException("Database name is required.");
        if (name.Length > MaxNameLength)
            throw new BadRequestException($"Database name is {name.Length} characters long; the limit is {MaxNameLength}.");
        if (!NamePattern().IsMatch(name) || name.Contains("..", StringComparison.Ordinal))
            throw new BadRequestException($"Database name '{Sanitize(name)}' is not valid: use letters, digits, '_', '-' and '.', not starting with '.'.");
    }

    private static string Sanitize(string s) => new(s.Take(64).Select(c => char.IsControl(c) ? '?' : c).ToArray());

    [GeneratedRegex(@"^[A-Za-z0-9_\-][A-Za-z0-9_\-.]*$")]
    private static partial Regex NamePattern();

    /// <summary>Creates a database. 409 ConcurrencyException when it exists.</summary>
    public void Create(string name, bool encrypted = false)
    {
        ValidateName(name);
        if (encrypted)
            CheckEncryptable(name);
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_names.ContainsKey(name) || _restoring.Contains(name))
                throw new ConcurrencyException($"Database '{name}' already exists.");
            string dir = DirectoryOf(name);
            System.IO.Directory.CreateDirectory(dir);
            new DatabaseRecordFile { DatabaseName = name, Encrypted = encrypted }.Write(dir);
            _names[name] = name;
            Log.Created(_logger, name, dir);
        }
    }

    /// <summary>
    /// An encrypted database needs a secured server (RavenDB's rule: its key travels only over TLS) and its key on this
    /// node; 400 otherwise, saying what to do.
    /// </summary>
    public void CheckEncryptable(string name)
    {
        if (!_options.Security.Secured)
            throw new BadRequestException($"Database {name} is encrypted and requires a node which supports SSL. There is no such node available in the cluster.");
        if (!Keys.Has(name))
            throw new BadRequestException($"Database '{name}' is encrypted, but node {_options.NodeTag} holds no key for it: generate one (GET /admin/secrets/generate) and distribute it (POST /admin/secrets/distribute?name={name}&node={_options.NodeTag}) first.");
    }

    /// <summary>
    /// Changes a database's record file (settings, client configuration) under the registry's lock and, when the
    /// database is open, its in-memory copy. Returns the record as written.
    /// </summary>
    public DatabaseRecordFile UpdateRecord(string name, Action<DatabaseRecordFile> change)
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (!_names.TryGetValue(name, out var stored))
                throw new DatabaseMissingException(name);
            if (_open.TryGetValue(stored, out var db))
            {
                db.UpdateRecord(change); // under the database's own lock, shared with imports
                return db.Record;
            }
            string dir = DirectoryOf(stored);
            var record = DatabaseRecordFile.Read(dir);
            change(record);
            record.Write(dir);
            return record;
        }
    }

    /// <summary>
    /// Takes a database offline (requests get 503 until it ends), closes it, runs <paramref name="work"/> with its
    /// folder, and brings it back (it opens on the next request). 400 when it is already offline.
    /// </summary>
    public T RunOffline<T>(string name, Func<string, T> work)
    {
        string stored;
        Database? db;
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (!_names.TryGetValue(name, out stored!))
                throw new DatabaseMissingException(name);
            if (!_offline.Add(stored))
                throw new BadRequestException($"Database '{stored}' is already being compacted.");
            _open.Remove(stored, out db);
        }
        try
        {
            db?.Dispose();
            return work(DirectoryOf(stored));
        }
        finally
        {
            lock (_lock)
                _offline.Remove(stored);
        }
    }

    /// <summary>The record of database <paramref name="name"/> as last written (404 DatabaseMissing when there is none).</summary>
    public DatabaseRecordFile ReadRecord(string name)
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (!_names.TryGetValue(name, out var stored))
                throw new DatabaseMissingException(name);
            return _open.TryGetValue(stored, out var db) ? db.Record : DatabaseRecordFile.Read(DirectoryOf(stored));
        }
    }

    /// <summary>
    /// Disables a database (it is closed, waiting for its requests, and answers 503 DatabaseDisabledException until enabled)
    /// or enables it (it opens on the next request). False when it already was so.
    /// </summary>
    public bool SetDisabled(string name, bool disabled)
    {
        bool changed = false;
        UpdateRecord(name, r =>
        {
            changed = r.Disabled != disabled;
            r.Disabled = disabled;
        });
        if (disabled && Find(name) is { } stored)
            Reload(stored);
        return changed;
    }

    /// <summary>
    /// Closes an open database (waiting for its requests, as <see cref="Database.Dispose"/> does) so that the next
    /// request opens it again with its current settings. Run it off the request that asked, which holds a lease.
    /// </summary>
    public void Reload(string name)
    {
        Database? db;
        var closed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_lock)
        {
            if (!_open.Remove(name, out db))
                return;
            _closing[name] = closed.Task;
        }
        try
        {
            db.Dispose();
        }
        finally
        {
            lock (_lock)
                _closing.Remove(name);
            closed.SetResult();
        }
    }

    /// <summary>How long a request waits for a reloading database's old instance to close before it is answered 503.</summary>
    private static readonly TimeSpan ReloadWait = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Creates database <paramref name="name"/> from files: reserves the name (400 when it exists), lets
    /// <paramref name="build"/> fill a staging folder beside the databases (its <c>storage/</c> and <c>Indexes/</c>), then
    /// moves it into place and registers it. When <paramref name="build"/> throws, the staging folder is deleted and the
    /// name is free again; a staging folder left by a crash is deleted at the next start.
    /// </summary>
    public void CreateFrom(string name, Action<string> build, bool encrypted = false)
    {
        ValidateName(name);
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_names.ContainsKey(name) || !_restoring.Add(name))
                throw new BadRequestException($"Cannot restore into database '{name}': it already exists (a restore creates a new database).");
        }
        string staging = Path.Combine(_root, StagingPrefix + Guid.NewGuid().ToString("N"));
        try
        {
            System.IO.Directory.CreateDirectory(staging);
            build(staging);
            new DatabaseRecordFile { DatabaseName = name, Encrypted = encrypted }.Write(staging);
            string dir = DirectoryOf(name);
            lock (_lock)
            {
                ObjectDisposedException.ThrowIf(_disposed, this);
                if (System.IO.Directory.Exists(dir))
                    System.IO.Directory.Delete(dir, recursive: true); // an unregistered leftover (no database.json)
                System.IO.Directory.Move(staging, dir);
                new Storage.Platform.DiskFileSystem().SyncDirectory(_root);
                _names[name] = name;
            }
            Log.Created(_logger, name, dir);
        }
        catch
        {
            if (System.IO.Directory.Exists(staging))
                System.IO.Directory.Delete(staging, recursive: true);
            throw;
        }
        finally
        {
            lock (_lock)
                _restoring.Remove(name);
        }
    }

    /// <summary>Closes and deletes a database with all its files. False when it did not exist.</summary>
    public bool Delete(string name)
    {
        Database? db;
        string dir;
        lock (_lock)
        {
            if (!_names.Remove(name))
                return false;
            _open.Remove(name, out db);
            dir = DirectoryOf(name);
        }
        db?.Dispose();
        if (System.IO.Directory.Exists(dir))
            System.IO.Directory.Delete(dir, recursive: true);
        Keys.Delete(name); // its files are gone: nothing is left that the key opens
        Log.Deleted(_logger, name);
        return true;
    }

    /// <summary>
    /// The open database with this name, opening it on first use, with a lease taken (release it
    /// with <see cref="Database.Release"/>). Throws <see cref="DatabaseMissingException"/> (503 +
    /// Database-Missing) when there is none.
    /// </summary>
    public Database Acquire(string name)
    {
        for (int attempt = 0; attempt < 3; attempt++)
        {
            Database? db;
            Task? closing = null;
            lock (_lock)
            {
                ObjectDisposedException.ThrowIf(_disposed, this);
                if (!_names.TryGetValue(name, out var stored))
                    throw new DatabaseMissingException(name);
                if (_offline.Contains(name))
                    throw new UnavailableException(RavenExceptionTypes.DatabaseDisabled, $"Database '{stored}' is offline while it is being compacted; it opens again when the compaction operation ends.");
                if (!_open.TryGetValue(name, out db) && !_closing.TryGetValue(name, out closing))
                {
                    if (File.Exists(Path.Combine(DirectoryOf(stored), DatabaseRecordFile.FileName)) && DatabaseRecordFile.Read(DirectoryOf(stored)).Disabled)
                        throw new UnavailableException(RavenExceptionTypes.DatabaseDisabled, $"Database '{stored}' is disabled; enable it (POST /admin/databases/enable) to use it.");
                    long started = System.Diagnostics.Stopwatch.GetTimestamp();
                    db = new Database(stored, DirectoryOf(stored), _options, _logger, _replicationConnector, _serverAnalysis, Keys);
                    _open[stored] = db;
                    Log.Opened(_logger, stored, (long)System.Diagnostics.Stopwatch.GetElapsedTime(started).TotalMilliseconds, db.OpenTimes.StorageMs, db.Environment.RecoveredTransactions, db.OpenTimes.IndexesMs);
                }
            }
            if (closing != null)
            {
                // Reloading: the old instance waits for its requests, then closes; this one opens after it.
                if (!closing.Wait(ReloadWait))
                    throw new UnavailableException(RavenExceptionTypes.DatabaseDisabled, $"Database '{name}' is reloading; try again.");
                continue;
            }
            if (db!.TryAcquire())
            {
                if (db.Environment.Failure != null)
                    ScheduleReopen(db);
                return db;
            }
        }
        throw new DatabaseMissingException(name);
    }

    /// <summary>
    /// A database whose storage stopped after an I/O error (a failed fsync, a journal write refused) takes no writes
    /// until its environment is reopened: after a pause (in-flight requests fail fast meanwhile, reads still answer), it
    /// is closed and the next request opens it again, which replays the journal. One reopen at a time per database, and
    /// at most one per <see cref="ReopenPause"/> while it keeps failing.
    /// </summary>
    private void ScheduleReopen(Database failed)
    {
        if (!failed.TryClaimReopen())
            return;
        Log.ReopeningFailed(_logger, failed.Name, failed.Environment.Failure?.Message ?? "");
        _ = Task.Run(async () =>
        {
            await Task.Delay(ReopenPause).ConfigureAwait(false);
            bool current;
            lock (_lock)
                current = !_disposed && _open.TryGetValue(failed.Name, out var open) && ReferenceEquals(open, failed);
            if (current)
                Reload(failed.Name);
        });
    }

    /// <summary>How long a failed database keeps its stopped environment before it is reopened.</summary>
    public static readonly TimeSpan ReopenPause = TimeSpan.FromSeconds(1);

    private string DirectoryOf(string name) => Path.Combine(_root, name.ToLowerInvariant());

    /// <summary>Closes every open database (flushing storage).</summary>
    public void Dispose()
    {
        List<Database> open;
        lock (_lock)
        {
            if (_disposed)
                return;
            _disposed = true;
            open = _open.Values.ToList();
            _open.Clear();
        }
        foreach (var db in open)
        {
            db.Dispose();
            Log.Closed(_logger, db.Name);
        }
    }
}
