using RavenLite.Storage.Transactions;

namespace RavenLite.Server.Etl;

/// <summary>
/// A database's ETL settings (docs/etl.md): its SQL connection strings and its ETL tasks (Raven connection strings are
/// replication's, shared). Stored as JSON under <c>State/EtlConfiguration</c> (docs/format/documents.md), written
/// through the merger. Immutable: a change makes a new one.
/// </summary>
public sealed record EtlConfiguration(IReadOnlyDictionary<string, SqlConnectionString> SqlConnectionStrings, IReadOnlyList<EtlTask> Tasks)
{
    internal static readonly byte[] StateKey = "EtlConfiguration"u8.ToArray();

    public static EtlConfiguration Empty { get; } = new(new Dictionary<string, SqlConnectionString>(StringComparer.OrdinalIgnoreCase), []);

    /// <summary>The stored configuration, or <see cref="Empty"/>.</summary>
    public static EtlConfiguration Read(Transaction tx)
    {
        using var json = Documents.DocumentsStorage.ReadState(tx, StateKey);
        if (json == null)
            return Empty;
        var strings = new Dictionary<string, SqlConnectionString>(StringComparer.OrdinalIgnoreCase);
        foreach (var cs in json.RootElement.GetProperty(nameof(SqlConnectionStrings)).EnumerateArray())
        {
            var parsed = SqlConnectionString.Parse(cs);
            strings[parsed.Name] = parsed;
        }
        return new EtlConfiguration(strings, [.. json.RootElement.GetProperty(nameof(Tasks)).EnumerateArray().Select(EtlTask.Parse)]);
    }

    public void Write(WriteTransaction tx) => Documents.DocumentsStorage.WriteState(tx, StateKey, w =>
    {
        w.WriteStartObject();
        w.WriteStartArray(nameof(SqlConnectionStrings));
        foreach (var cs in SqlConnectionStrings.Values)
            cs.Write(w);
        w.WriteEndArray();
        w.WriteStartArray(nameof(Tasks));
        foreach (var t in Tasks)
            t.Write(w);
        w.WriteEndArray();
        w.WriteEndObject();
    });

    public EtlConfiguration With(SqlConnectionString cs) =>
        this with { SqlConnectionStrings = new Dictionary<string, SqlConnectionString>(SqlConnectionStrings, StringComparer.OrdinalIgnoreCase) { [cs.Name] = cs } };

    public EtlConfiguration With(EtlTask task) => this with { Tasks = [.. Tasks.Where(t => t.TaskId != task.TaskId), task] };

    public EtlConfiguration Without(long taskId) => this with { Tasks = [.. Tasks.Where(t => t.TaskId != taskId)] };
}

/// <summary>
/// Where each transformation of each task has got to: the last etag it loaded (durably at its destination), under
/// <c>State/Etl/{taskId}/{transformation}</c>. Written after the destination committed, so a crash between the two
/// replays the batch — which loads the same result again (every load deletes what the documents loaded before).
/// </summary>
internal static class EtlPositions
{
    public static byte[] Key(long taskId, string transformation) =>
        Encoding.UTF8.GetBytes($"Etl/{taskId.ToString(CultureInfo.InvariantCulture)}/{transformation.ToLowerInvariant()}");

    public static long Read(Transaction tx, long taskId, string transformation)
    {
        using var json = Documents.DocumentsStorage.ReadState(tx, Key(taskId, transformation));
        return json != null && json.RootElement.TryGetProperty("LastProcessedEtag", out var e) ? e.GetInt64() : 0;
    }

    public static void Write(WriteTransaction tx, long taskId, string transformation, long etag) =>
        Documents.DocumentsStorage.WriteState(tx, Key(taskId, transformation), w =>
        {
            w.WriteStartObject();
            w.WriteNumber("LastProcessedEtag", etag);
            w.WriteEndObject();
        });
}
