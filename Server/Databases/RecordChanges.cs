using RavenLite.Server.Expiration;
using RavenLite.Server.Indexing;
using RavenLite.Server.Replication;
using RavenLite.Server.Revisions;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Databases;

/// <summary>
/// The changes to a database's record that every instance of the database applies (docs/cluster.md "Database
/// records"): index definitions, the revisions, expiration and refresh configurations, and the conflict solver. Each is
/// a kind and a JSON body: <see cref="Prepare"/> checks the body (400 before anything changes) and gives what applies
/// it to one instance — on a single server at once, in a cluster on every member of the database's group, in the order
/// Raft committed the changes.
/// </summary>
public static class RecordChanges
{
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

    /// <summary>Checks <paramref name="body"/> for <paramref name="kind"/> (400 naming what is wrong) and returns what applies it to an instance.</summary>
    public static Func<Database, Task> Prepare(string kind, JsonElement body) => kind switch
    {
        PutIndexes => PrepareIndexes(body),
        DeleteIndex => PrepareDelete(body),
        Revisions => Store(RevisionsConfiguration.Parse(body), (db, tx, c) => db.Revisions.Save(tx, c)),
        Expiration => Store(ExpirationConfiguration.Parse(body, "DeleteFrequencyInSec"), (db, tx, c) => db.Expiration.Save(tx, false, c)),
        Refresh => Store(ExpirationConfiguration.Parse(body, "RefreshFrequencyInSec"), (db, tx, c) => db.Expiration.Save(tx, true, c)),
        ConflictSolver => PrepareSolver(body),
        _ => throw new BadRequestException($"'{kind}' is not a change of a database record this server knows."),
    };

    /// <summary>The definitions of a <see cref="PutIndexes"/> body (400 when it is not one).</summary>
    public static List<IndexDefinition> Definitions(JsonElement body)
    {
        if (body.ValueKind != JsonValueKind.Object || !body.TryGetProperty("Indexes", out var list) || list.ValueKind != JsonValueKind.Array)
            throw new BadRequestException("The body must be {\"Indexes\":[IndexDefinition, ...]}.");
        return [.. list.EnumerateArray().Select(IndexDefinitionJson.Read)];
    }

    private static Func<Database, Task> PrepareIndexes(JsonElement body)
    {
        var definitions = Definitions(body);
        var compiled = definitions.Select(IndexCompiler.Compile).ToList(); // every definition is checked before any is stored
        return db =>
        {
            for (int i = 0; i < definitions.Count; i++)
                db.Indexes.Put(definitions[i], compiled[i]);
            return Task.CompletedTask;
        };
    }

    private static Func<Database, Task> PrepareDelete(JsonElement body)
    {
        string name = body.ValueKind == JsonValueKind.Object && body.TryGetProperty("Name", out var n) && n.ValueKind == JsonValueKind.String
            ? n.GetString()! : throw new BadRequestException("The body must be {\"Name\": index name}.");
        return db =>
        {
            db.Indexes.Delete(name);
            return Task.CompletedTask;
        };
    }

    private static Func<Database, Task> PrepareSolver(JsonElement body)
    {
        var solver = Replication.ConflictSolver.Parse(body);
        return db => db.Replication.SetSolverAsync(solver);
    }

    /// <summary>A configuration stored in its database's files, through the merger.</summary>
    private static Func<Database, Task> Store<T>(T configuration, Action<Database, Storage.Transactions.WriteTransaction, T> save) =>
        db => db.Merger.EnqueueAsync(new DelegateCommand<int>(ctx =>
        {
            save(db, ctx.Transaction, configuration);
            return 0;
        }));
}
