using System.Security.Cryptography;
using RavenLite.Server.Databases;

namespace RavenLite.Server.Indexing;

/// <summary>
/// A database's indexes: <c>{db}/Indexes/{folder}/definition.json</c> plus the index's storage in
/// <c>storage/</c>. Loads and starts every index when the database opens; creates static indexes from
/// definitions and auto indexes for dynamic queries (widening an existing one when a query needs more
/// fields, as RavenDB does); deletes and resets. Thread-safe.
/// </summary>
public sealed class IndexStore : IDisposable
{
    /// <summary>Longest index name.</summary>
    public const int MaxNameLength = 256;
    private const string DefinitionFile = "definition.json";

    private readonly Database _db;
    private readonly string _root;
    private readonly ILogger _logger;
    private readonly object _lock = new();
    private readonly Dictionary<string, Index> _indexes = new(StringComparer.OrdinalIgnoreCase);
    private bool _disposed;

    internal IndexStore(Database db, ILogger logger)
    {
        _db = db;
        _logger = logger;
        _root = Path.Combine(db.Directory, "Indexes");
        Directory.CreateDirectory(_root);
        foreach (string folder in Directory.GetDirectories(_root))
        {
            string file = Path.Combine(folder, DefinitionFile);
            if (!File.Exists(file))
            {
                // A folder without a definition is a creation that did not finish.
                Directory.Delete(folder, recursive: true);
                continue;
            }
            try
            {
                var definition = IndexDefinition.Deserialize(File.ReadAllBytes(file));
                var index = new Index(db, definition, IndexCompiler.Compile(definition, db.Analysis, checkAnalyzers: false), folder, logger);
                _indexes[definition.Name] = index;
            }
            catch (Exception e) when (e is JsonException or DomainException or IOException)
            {
                Logging.Log.IndexSkipped(logger, folder, e.Message);
            }
        }
        _snapshot = _indexes.Values.ToArray();
        foreach (var index in _snapshot)
            index.Start();
        foreach (var index in _snapshot.Where(i => i.Name.StartsWith(IndexDefinition.ReplacementPrefix, StringComparison.OrdinalIgnoreCase)))
            WatchReplacement(index); // a replacement that had not caught up when the database closed
    }

    /// <summary>Every index, by name.</summary>
    public IReadOnlyList<Index> All
    {
        get
        {
            lock (_lock)
                return _indexes.Values.OrderBy(i => i.Name, StringComparer.OrdinalIgnoreCase).ToList();
        }
    }

    /// <summary>The index with this name (any casing), or null.</summary>
    public Index? Get(string name)
    {
        lock (_lock)
            return _indexes.GetValueOrDefault(name);
    }

    /// <summary>Wakes every index worker (documents were committed).</summary>
    public void NotifyAll()
    {
        foreach (var index in _snapshot)
            index.Notify();
    }

    private volatile Index[] _snapshot = [];

    /// <summary>
    /// Creates or replaces a static index. 400 IndexCompilationException when its maps are outside the
    /// supported forms (nothing changes then). Putting an identical definition again keeps the index as it is.
    /// </summary>
    /// <param name="definition">The definition.</param>
    /// <param name="compiled">The definition compiled already (by the caller's validation), else null.</param>
    public Index Put(IndexDefinition definition, CompiledIndex? compiled = null)
    {
        ValidateName(definition.Name);
        if (definition.Name.StartsWith("Auto/", StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"Index names starting with 'Auto/' are reserved for auto indexes: '{definition.Name}'.");
        if (definition.Name.StartsWith(IndexDefinition.ReplacementPrefix, StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"Index names starting with '{IndexDefinition.ReplacementPrefix}' are reserved for side-by-side replacements: '{definition.Name}'.");
        compiled ??= IndexCompiler.Compile(definition, _db.Analysis);
        Index replacement;
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            string replacementName = IndexDefinition.ReplacementPrefix + definition.Name;
            _indexes.TryGetValue(replacementName, out var pending);
            if (!_indexes.TryGetValue(definition.Name, out var existing))
                return CreateLocked(definition, compiled);
            if (!SameDefinition(existing.Definition, definition) && existing.Definition.LockMode == "LockedIgnore")
                return existing; // RavenDB: a locked index ignores new definitions
            if (!SameDefinition(existing.Definition, definition) && existing.Definition.LockMode == "LockedError")
                throw new BadRequestException($"Index '{existing.Name}' is locked (LockedError): its definition cannot change. Unlock it first (/indexes/set-lock).");
            if (SameDefinition(existing.Definition, definition))
            {
                if (pending != null)
                    RemoveLocked(pending); // the definition went back to the one in use
                return existing;
            }
            if (pending != null && SameDefinition(pending.Definition, definition))
                return pending;
            if (pending != null)
                RemoveLocked(pending);
            // Side by side: the new definition builds as ReplacementOf/{name} while the current index answers, and
            // takes the name once it has caught up (WatchReplacement).
            definition.Name = replacementName;
            replacement = CreateLocked(definition, compiled);
        }
        WatchReplacement(replacement);
        return replacement;
    }

    /// <summary>Swaps <paramref name="replacement"/> in for the index it replaces once it is no longer stale.</summary>
    private void WatchReplacement(Index replacement) => _ = Task.Run(async () =>
    {
        while (true)
        {
            bool caughtUp;
            try
            {
                caughtUp = await replacement.WaitForNonStaleAsync(TimeSpan.FromSeconds(10), CancellationToken.None).ConfigureAwait(false);
            }
            catch (ObjectDisposedException)
            {
                return;
            }
            lock (_lock)
            {
                if (_disposed || !_indexes.TryGetValue(replacement.Name, out var current) || current != replacement)
                    return; // deleted or replaced meanwhile
                if (caughtUp)
                {
                    SwapLocked(replacement);
                    return;
                }
            }
        }
    });

    /// <summary>
    /// Gives a caught-up replacement its index's name: the old index is deleted, the replacement closed, its folder moved
    /// to the name's folder with the definition renamed, and opened again under the name (its storage data, by StoreId,
    /// stays where it is). Queries in between wait on the store's lock.
    /// </summary>
    private void SwapLocked(Index replacement)
    {
        string name = replacement.Name[IndexDefinition.ReplacementPrefix.Length..];
        Detach(replacement);
        if (_indexes.TryGetValue(name, out var old))
            RemoveLocked(old);
        replacement.Dispose();
        var definition = IndexDefinition.Deserialize(replacement.Definition.Serialize());
        definition.Name = name;
        string folder = Path.Combine(_root, FolderName(name));
        if (!string.Equals(Path.GetFullPath(folder), Path.GetFullPath(replacement.Folder), StringComparison.Ordinal))
        {
            if (Directory.Exists(folder))
                Directory.Delete(folder, recursive: true);
            Directory.Move(replacement.Folder, folder);
        }
        WriteDefinition(folder, definition);
        var index = new Index(_db, definition, replacement.Compiled, folder, _logger);
        _indexes[name] = index;
        _snapshot = _indexes.Values.ToArray();
        index.Start();
        Logging.Log.IndexCreated(_logger, name, definition.Type + " (side-by-side replacement)");
        _db.Documents.Changes.Publish(new Changes.ChangeEvent(Changes.ChangeKind.Index, "SideBySideReplace", Name: name));
    }

    /// <summary>
    /// The auto index a dynamic query on <paramref name="collection"/> uses: an existing one covering
    /// <paramref name="fields"/>, else a new one covering them and every field of the collection's
    /// existing auto indexes (which <see cref="RetireSuperseded"/> later deletes). <c>Created</c>
    /// tells the caller to wait for it to catch up: it is true for every query that finds the index
    /// still in its first build, not only the one that created it, so none answers an empty stale result.
    /// </summary>
    public (Index Index, bool Created) GetOrCreateAuto(string collection, IReadOnlyList<AutoField> fields)
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            var (covering, definition) = PlanAutoLocked(collection, fields);
            if (covering != null)
                return (covering, covering.FirstBuildPending);
            return (StartFirstBuild(CreateLocked(definition!, IndexCompiler.Compile(definition!, _db.Analysis, checkAnalyzers: false))), true);
        }
    }

    /// <summary>What <see cref="GetOrCreateAuto"/> would do, doing nothing: the covering index, or the name of the one it would create.</summary>
    public (Index? Covering, string Name) PlanAuto(string collection, IReadOnlyList<AutoField> fields)
    {
        lock (_lock)
        {
            var (covering, definition) = PlanAutoLocked(collection, fields);
            return (covering, covering?.Name ?? definition!.Name);
        }
    }

    /// <summary>The existing auto index covering <paramref name="fields"/>, else the definition of the one to create.</summary>
    private (Index? Covering, IndexDefinition? Definition) PlanAutoLocked(string collection, IReadOnlyList<AutoField> fields)
    {
        var sameCollection = _indexes.Values.Where(i => i.Definition.IsAuto && string.Equals(i.Definition.Collection, collection, StringComparison.OrdinalIgnoreCase)).ToList();
        var covering = sameCollection.Where(i => Covers(i.Definition.AutoFields, fields)).OrderBy(i => i.Definition.AutoFields.Count).FirstOrDefault();
        if (covering != null)
            return (covering, null);
        var union = new Dictionary<string, bool>(StringComparer.Ordinal);
        foreach (var f in sameCollection.SelectMany(i => i.Definition.AutoFields).Concat(fields))
            union[f.Path] = union.GetValueOrDefault(f.Path) || f.Search;
        var autoFields = union.OrderBy(kv => kv.Key, StringComparer.Ordinal).Select(kv => new AutoField(kv.Key, kv.Value)).ToList();
        return (null, new IndexDefinition
        {
            Name = IndexDefinition.AutoName(collection, autoFields),
            Type = "AutoMap",
            Collection = collection,
            AutoFields = autoFields,
        });
    }

    /// <summary>The auto map-reduce index of a group by query (<see cref="AutoMapReduce"/>), created when missing (<c>Created</c>).</summary>
    public (Index Index, bool Created) GetOrCreateAutoMapReduce(string collection, IReadOnlyList<string> groupBy, IReadOnlyList<string> sums)
    {
        string name = AutoMapReduce.Name(collection, groupBy, sums);
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_indexes.TryGetValue(name, out var existing))
                return (existing, existing.FirstBuildPending);
            var definition = AutoMapReduce.Definition(collection, groupBy, sums);
            return (StartFirstBuild(CreateLocked(definition, IndexCompiler.Compile(definition, _db.Analysis, checkAnalyzers: false))), true);
        }
    }

    private static Index StartFirstBuild(Index index)
    {
        index.FirstBuildPending = true;
        return index;
    }

    /// <summary>Deletes the auto indexes of <paramref name="wider"/>'s collection whose fields it covers (call once it has caught up).</summary>
    public void RetireSuperseded(Index wider)
    {
        List<Index> retired;
        lock (_lock)
        {
            retired = _indexes.Values.Where(i => i != wider && i.Definition.IsAuto
                && string.Equals(i.Definition.Collection, wider.Definition.Collection, StringComparison.OrdinalIgnoreCase)
                && Covers(wider.Definition.AutoFields, i.Definition.AutoFields)).ToList();
            foreach (var i in retired)
                Detach(i);
        }
        foreach (var i in retired)
            DisposeAndDelete(i);
    }

    /// <summary>Deletes an index and its files. False when there is none by that name.</summary>
    public bool Delete(string name)
    {
        Index? index;
        lock (_lock)
        {
            if (!_indexes.TryGetValue(name, out index))
                return false;
            Detach(index);
        }
        index.StopWorker();
        index.DeleteOutputDocuments(); // its outputs go with it (a side-by-side replacement keeps them: it writes the same collection)
        DisposeAndDelete(index);
        _db.Documents.Changes.Publish(new Changes.ChangeEvent(Changes.ChangeKind.Index, "IndexRemoved", Name: index.Name));
        return true;
    }

    private static bool Covers(List<AutoField> have, IEnumerable<AutoField> want) =>
        want.All(w => have.Any(h => h.Path == w.Path && (h.Search || !w.Search)));

    private static bool SameDefinition(IndexDefinition a, IndexDefinition b) =>
        a.Maps.SequenceEqual(b.Maps, StringComparer.Ordinal)
        && a.Type == b.Type
        && string.Equals(a.Reduce, b.Reduce, StringComparison.Ordinal)
        && string.Equals(a.OutputReduceToCollection, b.OutputReduceToCollection, StringComparison.Ordinal)
        && string.Equals(a.PatternForOutputReduceToCollectionReferences, b.PatternForOutputReduceToCollectionReferences, StringComparison.Ordinal)
        && string.Equals(a.PatternReferencesCollectionName, b.PatternReferencesCollectionName, StringComparison.Ordinal)
        && a.AdditionalSources.Count == b.AdditionalSources.Count
        && a.AdditionalSources.All(kv => b.AdditionalSources.TryGetValue(kv.Key, out var v) && v == kv.Value)
        && a.FieldOptions.Count == b.FieldOptions.Count
        && a.FieldOptions.All(kv => b.FieldOptions.TryGetValue(kv.Key, out var o) && o.GetRawText() == kv.Value.GetRawText())
        && a.AdditionalAssemblies.SequenceEqual(b.AdditionalAssemblies, StringComparer.Ordinal)
        && a.SourceType == b.SourceType
        && a.Configuration.Count == b.Configuration.Count
        && a.Configuration.All(kv => b.Configuration.TryGetValue(kv.Key, out var v) && v == kv.Value);

    private Index CreateLocked(IndexDefinition definition, CompiledIndex compiled)
    {
        string folder = Path.Combine(_root, FolderName(definition.Name));
        if (Directory.Exists(folder))
            Directory.Delete(folder, recursive: true);
        Directory.CreateDirectory(folder);
        definition.StoreId ??= Guid.NewGuid().ToString("N");
        WriteDefinition(folder, definition);
        var index = new Index(_db, definition, compiled, folder, _logger);
        _indexes[definition.Name] = index;
        _snapshot = _indexes.Values.ToArray();
        index.Start();
        Logging.Log.IndexCreated(_logger, definition.Name, definition.Type);
        _db.Documents.Changes.Publish(new Changes.ChangeEvent(Changes.ChangeKind.Index, "IndexAdded", Name: definition.Name));
        return index;
    }

    /// <summary>
    /// Changes an index's lock mode, priority or state (<paramref name="change"/> edits its definition), stores the
    /// definition, applies it and publishes <paramref name="changeType"/> (an IndexChange). IndexDoesNotExistException when
    /// there is no such index.
    /// </summary>
    public void UpdateSettings(string name, string changeType, Action<IndexDefinition> change)
    {
        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            var index = _indexes.GetValueOrDefault(name) ?? throw new NotFoundException(RavenExceptionTypes.IndexDoesNotExist, $"Index '{name}' does not exist.");
            change(index.Definition);
            WriteDefinition(index.Folder, index.Definition);
            index.ApplySettings();
        }
        _db.Documents.Changes.Publish(new Changes.ChangeEvent(Changes.ChangeKind.Index, changeType, Name: name));
    }

    /// <summary>
    /// Indexing was stopped for the whole database (<c>admin/indexes/stop</c> without a name) and not started since: the
    /// database's indexing status is Paused. Stopping single indexes leaves it Running, as RavenDB.
    /// </summary>
    public bool IndexingStopped { get; set; }

    /// <summary>Whether <paramref name="definition"/> differs from the index of its name (true when there is none): what a PUT would rebuild.</summary>
    public bool HasChanged(IndexDefinition definition)
    {
        ArgumentNullException.ThrowIfNull(definition);
        return Get(definition.Name) is not { } existing || !SameDefinition(existing.Definition, definition);
    }

    private static void WriteDefinition(string folder, IndexDefinition definition)
    {
        string tmp = Path.Combine(folder, DefinitionFile + ".tmp");
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write))
        {
            f.Write(definition.Serialize());
            f.Flush(flushToDisk: true);
        }
        File.Move(tmp, Path.Combine(folder, DefinitionFile), overwrite: true);
    }

    private void RemoveLocked(Index index)
    {
        Detach(index);
        DisposeAndDelete(index);
    }

    private void Detach(Index index)
    {
        _indexes.Remove(index.Name);
        _snapshot = _indexes.Values.ToArray();
    }

    private static void DisposeAndDelete(Index index)
    {
        index.Dispose();
        index.DropMapResults();
        // The definition goes first: a folder without one is cleaned up on the next start.
        File.Delete(Path.Combine(index.Folder, DefinitionFile));
        Directory.Delete(index.Folder, recursive: true);
    }

    /// <summary>400 for an empty, over-long or control-character name.</summary>
    public static void ValidateName(string? name)
    {
        if (string.IsNullOrWhiteSpace(name))
            throw new BadRequestException("Index name is required.");
        if (name.Length > MaxNameLength)
            throw new BadRequestException($"Index name is {name.Length} characters long; the limit is {MaxNameLength}.");
        if (name.Any(char.IsControl))
            throw new BadRequestException("Index names may not contain control characters.");
    }

    /// <summary>A folder name for an index: its letters and digits, then a hash of the lower-cased name.</summary>
    private static string FolderName(string name)
    {
        var safe = new string(name.Take(64).Select(c => char.IsAsciiLetterOrDigit(c) ? c : '_').ToArray());
        var hash = SHA256.HashData(Encoding.UTF8.GetBytes(name.ToLowerInvariant()));
        return safe + "-" + Convert.ToHexString(hash, 0, 6).ToLowerInvariant();
    }

    /// <summary>Stops every worker and closes every index.</summary>
    public void Dispose()
    {
        List<Index> all;
        lock (_lock)
        {
            _disposed = true;
            all = _indexes.Values.ToList();
            _indexes.Clear();
            _snapshot = [];
        }
        foreach (var i in all)
            i.Dispose();
    }
}
