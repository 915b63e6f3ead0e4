using RavenLite.Server.Expiration;
using RavenLite.Server.Indexing;
using RavenLite.Server.Replication;
using RavenLite.Server.Revisions;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Databases;

/// <summary>
/// The changes to a database's record that every instance of the database applies (docs/cluster.md "Database
/// records"): index definitions and their lock mode, priority and state, the revisions, expiration, refresh and
/// time-series configurations, the conflict solver, the client configuration, the database settings and the ongoing
/// tasks (<see cref="OngoingTaskChanges"/>). Each is a kind and a JSON body: <see cref="Prepare"/> checks the body (400
/// before anything changes) and gives what applies it to one instance — on a single server at once, in a cluster on
/// every member of the database's group, in the order Raft committed the changes.
/// </summary>
public static class RecordChanges
{
    /// <summary>
    /// Applies a change to one instance and returns its result (a new task's id; 0 for kinds without one).
    /// <paramref name="changeIndex"/> is the change's Raft index in a group (every member gives a new task that id), 0 on
    /// a single server (the database's own index counter gives it).
    /// </summary>
    public delegate Task<long> Apply(Database db, DatabaseRegistry registry, long changeIndex);

    /// <summary><c>{"Indexes": [IndexDefinition, ..]}</c>: each compiled first, then stored (a changed one rebuilds).</summary>
    public const string PutIndexes = "PutIndexes";

    /// <summary><c>{"Name": ..}</c>: the index is deleted (already gone: nothing to do).</summary>
    public const string DeleteIndex = "DeleteIndex";

    /// <summary>RavenDB's <c>RevisionsConfiguration</c>.</summary>
    public const string Revisions = "Revisions";

    /// <summary>RavenDB's <c>ExpirationConfiguration</c>.</summary>
    public const string Expiration = "Expiration";

    /// <summary>RavenDB's <c>RefreshConfiguration</c>.</summary>
    public const string Refresh = "Refresh";

    /// <summary>RavenDB's <c>ConflictSolver</c> (<c>ResolveToLatest</c>, scripts by collection).</summary>
    public const string ConflictSolver = "ConflictSolver";

    /// <summary>RavenDB's <c>TimeSeriesConfiguration</c>, whole (a policy or value-names change is sent as the configuration it makes).</summary>
    public const string TimeSeries = "TimeSeries";

    /// <summary><c>{"IndexNames": [..], "Mode"?, "Priority"?, "State"?}</c>: index settings (an index gone meanwhile is skipped).</summary>
    public const string IndexSettings = "IndexSettings";

    /// <summary>RavenDB's <c>ClientConfiguration</c> of the database.</summary>
    public const string ClientConfiguration = "ClientConfiguration";

    /// <summary>The database's setting overrides (<see cref="DatabaseRecordFile.KnownSettings"/>): the instance reopens to apply them.</summary>
    public const string Settings = "Settings";

    /// <summary>Custom analyzers put (<c>{"Analyzers":[{Name, Code}]}</c>) or deleted (<c>{"Name"}</c>).</summary>
    public const string PutAnalyzers = "PutAnalyzers", DeleteAnalyzer = "DeleteAnalyzer";

    /// <summary>Custom sorters put (<c>{"Sorters":[{Name, Code}]}</c>) or deleted (<c>{"Name"}</c>).</summary>
    public const string PutSorters = "PutSorters", DeleteSorter = "DeleteSorter";

    /// <summary>RavenDB's documents compression configuration (<c>{Collections, CompressAllCollections, CompressRevisions}</c>), kept in the record.</summary>
    public const string DocumentsCompression = "DocumentsCompression";

    /// <summary>
    /// Checks <paramref name="body"/> for <paramref name="kind"/> (400 naming what is wrong; with <paramref name="asked"/>,
    /// the instance of the node that was asked, also against what it holds — 404 for a task it does not have) and returns
    /// what applies it to an instance.
    /// </summary>
    public static Apply Prepare(string kind, JsonElement body, Database? asked = null) => kind switch
    {
        PutIndexes => Done(PrepareIndexes(body, asked)),
        PutAnalyzers or PutSorters => Done(PrepareCustomCode(kind == PutSorters, body)),
        DocumentsCompression => Done(PrepareCompression(body)),
        DeleteAnalyzer or DeleteSorter => Done(PrepareCustomCodeDelete(kind == DeleteSorter, body)),
        DeleteIndex => Done(PrepareDelete(body)),
        IndexSettings => Done(PrepareIndexSettings(body)),
        Revisions => Done(Store(RevisionsConfiguration.Parse(body), (db, tx, c) => db.Revisions.Save(tx, c))),
        Expiration => Done(Store(ExpirationConfiguration.Parse(body, "DeleteFrequencyInSec"), (db, tx, c) => db.Expiration.Save(tx, false, c))),
        Refresh => Done(Store(ExpirationConfiguration.Parse(body, "RefreshFrequencyInSec"), (db, tx, c) => db.Expiration.Save(tx, true, c))),
        TimeSeries => Done(Store(Server.TimeSeries.TimeSeriesConfiguration.Parse(body), (db, tx, c) => db.TimeSeries.Save(tx, c))),
        ConflictSolver => Done(PrepareSolver(body)),
        ClientConfiguration => Done(PrepareClient(body)),
        Settings => Done(PrepareSettings(body)),
        _ when OngoingTaskChanges.Knows(kind) => OngoingTaskChanges.Prepare(kind, body, asked),
        _ => throw new BadRequestException($"'{kind}' is not a change of a database record this server knows."),
    };

    /// <summary>An apply with no result.</summary>
    internal static Apply Done(Func<Database, DatabaseRegistry, Task> apply) => async (db, registry, _) =>
    {
        await apply(db, registry).ConfigureAwait(false);
        return 0;
    };

    /// <summary>The definitions of a <see cref="PutIndexes"/> body (400 when it is not one).</summary>
    public static List<IndexDefinition> Definitions(JsonElement body)
    {
        if (body.ValueKind != JsonValueKind.Object || !body.TryGetProperty("Indexes", out var list) || list.ValueKind != JsonValueKind.Array)
            throw new BadRequestException("The body must be {\"Indexes\":[IndexDefinition, ...]}.");
        return [.. list.EnumerateArray().Select(IndexDefinitionJson.Read)];
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareIndexes(JsonElement body, Database? asked)
    {
        var definitions = Definitions(body);
        // Every definition is checked before any is stored (custom analyzers against the asked node's database); an
        // instance compiles them again with its own analyzers unless it is the one asked.
        var compiled = definitions.Select(d => IndexCompiler.Compile(d, asked?.Analysis, checkAnalyzers: asked != null)).ToList();
        var names = definitions.Select(d => d.Name).ToList(); // a side-by-side replacement is renamed when it is put
        return (db, registry) =>
        {
            for (int i = 0; i < definitions.Count; i++)
                db.Indexes.Put(definitions[i], db == asked ? compiled[i] : IndexCompiler.Compile(definitions[i], db.Analysis, checkAnalyzers: false));
            // The record's IndexesHistory: each definition as stored (a put that changed nothing leaves it as it was).
            var history = new List<(string Name, System.Text.Json.Nodes.JsonNode Json, DateTime At)>();
            foreach (string name in names)
                if ((db.Indexes.Get(IndexDefinition.ReplacementPrefix + name) ?? db.Indexes.Get(name)) is { } stored && !stored.Definition.IsAnyAuto)
                {
                    var buffer = new System.Buffers.ArrayBufferWriter<byte>(512);
                    using (var w = new Utf8JsonWriter(buffer))
                        IndexDefinitionJson.Write(w, stored);
                    var json = System.Text.Json.Nodes.JsonNode.Parse(buffer.WrittenSpan)!;
                    json["Name"] = name; // a side-by-side replacement's as the name it takes
                    history.Add((name, json, stored.Definition.CreatedAt));
                }
            if (history.Count > 0)
                registry.UpdateRecord(db.Name, r =>
                {
                    foreach (var (name, json, at) in history)
                        if (!(r.IndexesHistory[name] is System.Text.Json.Nodes.JsonArray { Count: > 0 } list && list[0]?["Definition"]?.ToJsonString() == json.ToJsonString()))
                            r.AddIndexHistory(name, json, at);
                });
            return Task.CompletedTask;
        };
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareCustomCode(bool sorters, JsonElement body)
    {
        var definitions = Indexing.Analysis.CustomAnalysis.Definitions(body, sorters);
        return (db, registry) =>
        {
            registry.UpdateRecord(db.Name, r =>
            {
                foreach (var (name, code) in definitions)
                    (sorters ? r.Sorters : r.Analyzers)[name] = code;
            });
            return Task.CompletedTask;
        };
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareCompression(JsonElement body)
    {
        if (body.ValueKind != JsonValueKind.Object
            || (body.TryGetProperty("Collections", out var c) && c.ValueKind is not (JsonValueKind.Array or JsonValueKind.Null))
            || (c.ValueKind == JsonValueKind.Array && c.EnumerateArray().Any(x => x.ValueKind != JsonValueKind.String)))
            throw new BadRequestException("The body must be {\"Collections\": [names], \"CompressAllCollections\": bool, \"CompressRevisions\": bool}.");
        bool Flag(string name) => body.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.True;
        var configuration = new System.Text.Json.Nodes.JsonObject
        {
            ["Collections"] = new System.Text.Json.Nodes.JsonArray([.. (c.ValueKind == JsonValueKind.Array ? c.EnumerateArray().Select(x => (System.Text.Json.Nodes.JsonNode?)x.GetString()) : [])]),
            ["CompressAllCollections"] = Flag("CompressAllCollections"),
            ["CompressRevisions"] = Flag("CompressRevisions"),
        };
        return (db, registry) =>
        {
            registry.UpdateRecord(db.Name, r => r.DocumentsCompression = (System.Text.Json.Nodes.JsonObject)configuration.DeepClone());
            return Task.CompletedTask;
        };
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareCustomCodeDelete(bool sorter, JsonElement body)
    {
        string name = body.ValueKind == JsonValueKind.Object && body.TryGetProperty("Name", out var n) && n.ValueKind == JsonValueKind.String
            ? n.GetString()! : throw new BadRequestException("The body must be {\"Name\": name}.");
        return (db, registry) =>
        {
            registry.UpdateRecord(db.Name, r => (sorter ? r.Sorters : r.Analyzers).Remove(name));
            return Task.CompletedTask;
        };
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareDelete(JsonElement body)
    {
        string name = body.ValueKind == JsonValueKind.Object && body.TryGetProperty("Name", out var n) && n.ValueKind == JsonValueKind.String
            ? n.GetString()! : throw new BadRequestException("The body must be {\"Name\": index name}.");
        return (db, _) =>
        {
            db.Indexes.Delete(name);
            return Task.CompletedTask;
        };
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareSolver(JsonElement body)
    {
        var solver = Replication.ConflictSolver.Parse(body);
        return (db, _) => db.Replication.SetSolverAsync(solver);
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareIndexSettings(JsonElement body)
    {
        if (body.ValueKind != JsonValueKind.Object || !body.TryGetProperty("IndexNames", out var names) || names.ValueKind != JsonValueKind.Array
            || names.EnumerateArray().Any(n => n.ValueKind != JsonValueKind.String))
            throw new BadRequestException("The body must be {\"IndexNames\": [..], \"Mode\" | \"Priority\" | \"State\": ..}.");
        string? Setting(string property, Func<string, string> check) =>
            body.TryGetProperty(property, out var v) && v.ValueKind == JsonValueKind.String ? check(v.GetString()!) : null;
        string? mode = Setting("Mode", IndexDefinitionJson.CheckLockMode);
        string? priority = Setting("Priority", IndexDefinitionJson.CheckPriority);
        string? state = Setting("State", s => s is "Normal" or "Disabled" ? s : throw new BadRequestException($"Index state '{s}' is not Normal or Disabled."));
        var list = names.EnumerateArray().Select(n => n.GetString()!).ToList();
        return (db, _) =>
        {
            // RavenDB's IndexChange types for each setting (state changes have their own: enabled, disabled).
            string change = mode != null ? "LockModeChanged" : priority != null ? "PriorityChanged" : state == "Disabled" ? "IndexDemotedToDisabled" : "IndexPromotedFromIdle";
            foreach (string name in list.Where(n => db.Indexes.Get(n) != null))
                db.Indexes.UpdateSettings(name, change, d =>
                {
                    d.LockMode = mode ?? d.LockMode;
                    d.Priority = priority ?? d.Priority;
                    d.State = state ?? d.State;
                });
            return Task.CompletedTask;
        };
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareClient(JsonElement body)
    {
        var configuration = DatabaseRecordFile.ParseClientConfiguration(body);
        return (db, registry) =>
        {
            registry.UpdateRecord(db.Name, r =>
            {
                r.Client = (System.Text.Json.Nodes.JsonObject)configuration.DeepClone();
                r.ClientEtag = Math.Max(DateTime.UtcNow.Ticks, r.ClientEtag + 1);
            });
            return Task.CompletedTask;
        };
    }

    private static Func<Database, DatabaseRegistry, Task> PrepareSettings(JsonElement body)
    {
        var settings = DatabaseRecordFile.ParseSettings(body);
        return (db, registry) =>
        {
            registry.UpdateRecord(db.Name, r => r.Settings = new Dictionary<string, string>(settings, StringComparer.Ordinal));
            string name = db.Name;
            // RavenDB reloads a database whose settings changed; the caller's lease is returned first (Reload waits for it).
            _ = Task.Run(() => registry.Reload(name));
            return Task.CompletedTask;
        };
    }

    /// <summary>A configuration stored in its database's files, through the merger.</summary>
    private static Func<Database, DatabaseRegistry, Task> Store<T>(T configuration, Action<Database, Storage.Transactions.WriteTransaction, T> save) =>
        (db, _) => db.Merger.EnqueueAsync(new DelegateCommand<int>(ctx =>
        {
            save(db, ctx.Transaction, configuration);
            return 0;
        }));
}
