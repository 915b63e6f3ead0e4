using RavenLite.Server.Databases;
using RavenLite.Server.Operations;
using RavenLite.Server.TransactionMerger;
using OperationStatus = RavenLite.Server.Operations.OperationStatus;

namespace RavenLite.Server.Backups;

/// <summary>
/// A database's backups: its periodic backup tasks (configurations and statuses kept in the storage tree
/// <c>PeriodicBackups</c>, written through the merger), a scheduler checking every second which task is due (full
/// backups by <c>FullBackupFrequency</c>, incrementals by <c>IncrementalBackupFrequency</c>, both cron in UTC), and
/// backups started by hand. One backup runs at a time per database; each is an operation (<c>/operations/state</c>)
/// whose result is RavenDB's <c>BackupResult</c>. Thread-safe.
/// </summary>
public sealed class BackupService : IDisposable
{
    /// <summary>The storage tree of tasks and statuses.</summary>
    public const string Tree = "PeriodicBackups";

    private readonly Database _db;
    private readonly ILogger _logger;
    private readonly object _lock = new();
    private readonly Dictionary<long, PeriodicBackupConfiguration> _tasks = [];
    private readonly Dictionary<long, BackupStatus> _statuses = [];
    private readonly SemaphoreSlim _running = new(1, 1);
    private readonly CancellationTokenSource _stop = new();
    private readonly Task _loop;

    internal BackupService(Database db, ILogger logger)
    {
        _db = db;
        _logger = logger;
        using (var tx = db.Environment.ReadTransaction())
        {
            if (tx.ReadTree(Tree) is { } tree)
            {
                var c = tree.CreateCursor();
                if (c.SeekToFirst())
                {
                    do
                    {
                        string key = Encoding.UTF8.GetString(c.Key);
                        try
                        {
                            using var json = JsonDocument.Parse(c.Value.ToArray());
                            if (key.StartsWith("config/", StringComparison.Ordinal))
                            {
                                var config = PeriodicBackupConfiguration.Parse(json.RootElement.GetProperty("Configuration"), periodic: true);
                                config.TaskId = json.RootElement.GetProperty("TaskId").GetInt64();
                                config.CreatedAt = json.RootElement.GetProperty("CreatedAt").GetDateTime();
                                config.Disabled = json.RootElement.GetProperty("Disabled").GetBoolean();
                                _tasks[config.TaskId] = config;
                            }
                            else if (key.StartsWith("status/", StringComparison.Ordinal))
                            {
                                var status = BackupStatus.Parse(json.RootElement);
                                _statuses[status.TaskId] = status;
                            }
                        }
                        catch (Exception e) when (e is JsonException or DomainException or KeyNotFoundException or InvalidOperationException or FormatException)
                        {
                            // A task this build cannot read does not keep the database from opening; it is reported and left.
                            Logging.Log.BackupFailed(_logger, db.Name, key, "stored task not readable: " + e.Message);
                        }
                    }
                    while (c.MoveNext());
                }
            }
        }
        _loop = Task.Run(LoopAsync);
    }

    /// <summary>The periodic tasks.</summary>
    public IReadOnlyList<PeriodicBackupConfiguration> Tasks
    {
        get
        {
            lock (_lock)
                return _tasks.Values.OrderBy(t => t.TaskId).ToList();
        }
    }

    /// <summary>A task's status (null: never ran).</summary>
    public BackupStatus? StatusOf(long taskId)
    {
        lock (_lock)
            return _statuses.GetValueOrDefault(taskId);
    }

    /// <summary>A task by id.</summary>
    public PeriodicBackupConfiguration? Get(long taskId)
    {
        lock (_lock)
            return _tasks.GetValueOrDefault(taskId);
    }

    /// <summary>
    /// Stores a task (new when its TaskId is 0 or unknown); returns the task id: for a new one <paramref name="newId"/>
    /// when it is above 0 (the Raft index of the change, the same on every member of a group), else the database's next index.
    /// </summary>
    public async Task<long> PutAsync(PeriodicBackupConfiguration config, long newId)
    {
        var command = new DelegateCommand<long>(ctx =>
        {
            var tree = ctx.Transaction.CreateTree(Tree);
            lock (_lock)
            {
                if (config.TaskId == 0 || !_tasks.TryGetValue(config.TaskId, out var existing))
                {
                    if (config.TaskId == 0)
                        config.TaskId = newId > 0 ? newId : CompareExchange.CompareExchangeStore.NextIndex(ctx.Transaction);
                }
                else
                {
                    config.CreatedAt = existing.CreatedAt;
                }
                if (config.Name.Length == 0)
                    config.Name = $"Backup #{config.TaskId.ToString(CultureInfo.InvariantCulture)}";
            }
            tree.Put(Key("config/", config.TaskId), Serialize(config));
            return config.TaskId;
        });
        await _db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        lock (_lock)
            _tasks[config.TaskId] = config;
        return command.Result;
    }

    /// <summary>Deletes a task and its status; false when there is none.</summary>
    public async Task<bool> DeleteAsync(long taskId)
    {
        lock (_lock)
            if (!_tasks.ContainsKey(taskId))
                return false;
        await _db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
        {
            var tree = ctx.Transaction.CreateTree(Tree);
            tree.Delete(Key("config/", taskId));
            tree.Delete(Key("status/", taskId));
            return true;
        })).ConfigureAwait(false);
        lock (_lock)
        {
            _tasks.Remove(taskId);
            _statuses.Remove(taskId);
        }
        return true;
    }

    /// <summary>Turns a task's schedule on or off.</summary>
    public async Task<bool> SetDisabledAsync(long taskId, bool disabled)
    {
        var config = Get(taskId);
        if (config == null)
            return false;
        config.Disabled = disabled;
        await PutAsync(config, 0).ConfigureAwait(false);
        return true;
    }

    /// <summary>
    /// Starts a backup as an operation and returns it at once: of task <paramref name="taskId"/> (full or incremental,
    /// recorded in its status), or a one-time full backup of <paramref name="oneTime"/>.
    /// </summary>
    public OperationState Start(PeriodicBackupConfiguration? oneTime, long taskId, bool full, long? operationId = null)
    {
        var task = oneTime ?? Get(taskId) ?? throw new NotFoundException(RavenExceptionTypes.RavenException, $"There is no backup task {taskId} in database '{_db.Name}'.");
        var state = _db.Operations.Start(operationId ?? _db.Operations.NextId(), "DatabaseBackup");
        _db.Operations.RunInBackground(state, async () =>
        {
            var result = await RunAsync(task, oneTime == null, full, state.Token, state.Id).ConfigureAwait(false);
            var json = new System.Buffers.ArrayBufferWriter<byte>(512);
            using (var w = new Utf8JsonWriter(json))
                result.WriteJson(w);
            state.AddProcessed(result.Documents);
            return json.WrittenSpan.ToArray();
        }, "The backup did not complete");
        return state;
    }

    /// <summary>Runs one backup now (waiting for a running one to end) and records it in the task's status when periodic.</summary>
    public async Task<BackupResult> RunAsync(PeriodicBackupConfiguration task, bool periodic, bool full, CancellationToken cancellation, long operationId = 0)
    {
        using var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellation, _stop.Token);
        await _running.WaitAsync(linked.Token).ConfigureAwait(false);
        try
        {
            var status = periodic ? StatusOf(task.TaskId) : null;
            bool incremental = periodic && !full && status?.FolderPath != null && Directory.Exists(status.FolderPath);
            BackupResult result;
            try
            {
                result = await OnLowPriorityThread(() => BackupWriter.Write(_db, task.Request(incremental, status?.FolderPath), linked.Token)).ConfigureAwait(false);
            }
            catch (Exception e) when (periodic && e is not OperationCanceledException)
            {
                await SaveStatusAsync((status ?? new BackupStatus { TaskId = task.TaskId }) with { Error = e.Message, ErrorAt = DateTime.UtcNow, LastOperationId = operationId }).ConfigureAwait(false);
                throw;
            }
            Logging.Log.BackupWritten(_logger, _db.Name, Path.Combine(result.Folder, result.FileName), result.Incremental, result.SizeInBytes, (long)result.Duration.TotalMilliseconds);
            if (periodic)
            {
                var previous = status ?? new BackupStatus { TaskId = task.TaskId };
                await SaveStatusAsync(previous with
                {
                    FolderPath = result.Folder,
                    FileName = result.FileName,
                    LastFullBackup = result.Incremental ? previous.LastFullBackup : result.CreatedAt,
                    LastIncrementalBackup = result.Incremental ? result.CreatedAt : previous.LastIncrementalBackup,
                    IsFull = !result.Incremental,
                    LastEtag = result.LastEtag,
                    DurationInMs = (long)result.Duration.TotalMilliseconds,
                    Error = null,
                    ErrorAt = null,
                    LastOperationId = operationId,
                    Type = task.Type,
                }).ConfigureAwait(false);
                if (!result.Incremental && task.MinimumBackupAgeToKeep is { } keep)
                    DeleteOldFolders(task.FolderPath, result.Folder, keep);
            }
            return result;
        }
        finally
        {
            _running.Release();
        }
    }

    /// <summary>
    /// Runs a backup on a thread of the lowest CPU priority (nice 19 on Linux): reading, hashing and compressing the
    /// pages yield the CPU to the request and merger threads.
    /// </summary>
    private static Task<T> OnLowPriorityThread<T>(Func<T> work)
    {
        var done = new TaskCompletionSource<T>(TaskCreationOptions.RunContinuationsAsynchronously);
        var thread = new Thread(() =>
        {
            try
            {
                Storage.Platform.ThreadPriorities.LowerCurrentThread();
                done.SetResult(work());
            }
            catch (Exception e)
            {
                done.SetException(e);
            }
        })
        { IsBackground = true, Name = "backup" };
        thread.Start();
        return done.Task;
    }

    /// <summary>Retention: this database's backup folders under <paramref name="root"/> older than <paramref name="keep"/> go, never the current one.</summary>
    private void DeleteOldFolders(string root, string current, TimeSpan keep)
    {
        foreach (string dir in Directory.EnumerateDirectories(root, $"*.ravendb-{_db.Name}-*"))
        {
            if (string.Equals(Path.GetFullPath(dir), Path.GetFullPath(current), StringComparison.Ordinal))
                continue;
            string stamp = Path.GetFileName(dir).Split(".ravendb-")[0];
            if (DateTime.TryParseExact(stamp, "yyyy-MM-dd-HH-mm-ss", CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var taken)
                && DateTime.UtcNow - taken > keep)
            {
                try
                {
                    Directory.Delete(dir, recursive: true);
                }
                catch (IOException)
                {
                }
            }
        }
    }

    private async Task SaveStatusAsync(BackupStatus status)
    {
        await _db.Merger.EnqueueAsync(new DelegateCommand<bool>(ctx =>
        {
            ctx.Transaction.CreateTree(Tree).Put(Key("status/", status.TaskId), status.ToJson());
            return true;
        })).ConfigureAwait(false);
        lock (_lock)
            _statuses[status.TaskId] = status;
    }

    /// <summary>When the task runs next, and whether that run is full (null: nothing scheduled).</summary>
    public (DateTime At, bool Full)? NextRun(PeriodicBackupConfiguration task)
    {
        var status = StatusOf(task.TaskId);
        // A failed run counts as a run for the schedule: the task tries again at its next occurrence, not every second.
        DateTime? lastFull = new[] { status?.LastFullBackup, status?.ErrorAt }.Max();
        DateTime? lastAny = new[] { status?.LastFullBackup, status?.LastIncrementalBackup, status?.ErrorAt }.Max();
        DateTime? nextFull = task.Full?.GetNextOccurrence(lastFull ?? task.CreatedAt);
        // An incremental needs a snapshot to follow; until the first full one, the incremental schedule takes a full one.
        DateTime? nextIncremental = task.Incremental?.GetNextOccurrence(lastAny ?? task.CreatedAt);
        bool haveChain = status?.FolderPath != null && status.Type == BackupType.Snapshot;
        if (nextFull is { } f && (nextIncremental is not { } i0 || f <= i0))
            return (f, true);
        if (nextIncremental is { } i)
            return (i, !haveChain);
        return null;
    }

    private async Task LoopAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            try
            {
                await Task.Delay(TimeSpan.FromSeconds(1), _stop.Token).ConfigureAwait(false);
                foreach (var task in Tasks)
                {
                    // In a group every member holds the task; the one responsible runs it (docs/cluster.md "Ongoing tasks").
                    if (task.Disabled || !_db.Ownership.Owns(task.TaskId, task.MentorNode) || NextRun(task) is not { } next || next.At > DateTime.UtcNow)
                        continue;
                    var state = Start(null, task.TaskId, next.Full);
                    while (state.Status == OperationStatus.InProgress && !_stop.IsCancellationRequested)
                        await Task.Delay(100, _stop.Token).ConfigureAwait(false);
                    if (state.Status == OperationStatus.Faulted)
                        Logging.Log.BackupFailed(_logger, _db.Name, task.Name, state.Error ?? "");
                }
            }
            catch (OperationCanceledException)
            {
                return;
            }
            catch (Exception e) when (e is not OutOfMemoryException)
            {
                Logging.Log.BackupFailed(_logger, _db.Name, "scheduler", e.Message);
            }
        }
    }

    private static byte[] Key(string prefix, long id) => Encoding.UTF8.GetBytes(prefix + id.ToString("D19", CultureInfo.InvariantCulture));

    private static byte[] Serialize(PeriodicBackupConfiguration config)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(512);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteNumber("TaskId", config.TaskId);
            w.WriteString("CreatedAt", config.CreatedAt);
            w.WriteBoolean("Disabled", config.Disabled);
            w.WritePropertyName("Configuration");
            w.WriteRawValue(config.Json);
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>Stops the scheduler (a running backup is cancelled).</summary>
    public void Dispose()
    {
        _stop.Cancel();
        try
        {
            _loop.Wait(TimeSpan.FromSeconds(30));
        }
        catch (AggregateException)
        {
        }
    }
}
