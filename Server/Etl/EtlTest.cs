using RavenLite.Server.Databases;

namespace RavenLite.Server.Etl;

/// <summary>
/// RavenDB's ETL script test (<c>POST /databases/{db}/admin/etl/sql/test</c>, <c>.../raven/test</c>): the configuration's
/// first transformation run on one document (or its deletion), nothing loaded; for SQL the statements it would run —
/// and, with <c>PerformRolledBackTransaction</c>, run in PostgreSQL and rolled back, so their errors show.
/// </summary>
internal static class EtlTest
{
    public sealed record Result(EtlTask Task, List<string> TransformationErrors, List<string> LoadErrors, List<string> DebugOutput, List<SqlEtlPlan.Delete> Deletes, List<SqlEtlPlan.Copy> Copies, List<EtlItem> Items);

    public static async Task<Result> RunAsync(Database db, JsonElement body, EtlKind kind, CancellationToken cancellation)
    {
        if (body.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("The body must be {DocumentId, Configuration, IsDelete?, PerformRolledBackTransaction?}.");
        string documentId = Replication.RavenConnectionString.Text(body, "DocumentId");
        bool isDelete = Replication.RavenConnectionString.Property(body, "IsDelete") is { ValueKind: JsonValueKind.True };
        var configJson = Replication.RavenConnectionString.Property(body, "Configuration") ?? throw new BadRequestException("'Configuration' is required.");
        var task = EtlTask.Parse(configJson);
        if (task.Kind != kind)
            throw new BadRequestException($"This endpoint tests {kind} ETL scripts; the configuration is {task.Kind}.");
        var transformation = task.Transforms[0];
        var errors = new List<string>();
        var output = new List<string>();
        var items = new List<EtlItem>();
        using var tx = db.Environment.ReadTransaction();
        var doc = db.Documents.Get(tx, documentId);
        if (doc == null && !isDelete)
            throw new NotFoundException(RavenExceptionTypes.DocumentDoesNotExist, $"There is no document '{documentId}'.");
        string collection = doc?.Collection ?? db.Documents.GetTombstone(tx, documentId)?.Collection ?? "@empty";
        string id = isDelete ? documentId.ToLowerInvariant() : doc!.Id; // a deletion is known by its tombstone's lower-cased id
        if (!transformation.Covers(collection))
            errors.Add($"Document '{documentId}' is in collection '{collection}', which transformation '{transformation.Name}' does not cover.");
        else if (transformation.Script.Trim().Length == 0)
            items.Add(new EtlItem(id, collection, doc?.Etag ?? 0, isDelete, true, isDelete ? [] : [EtlWholeDocument.Of(doc!)]));
        else
        {
            var script = new EtlScript(task, transformation);
            script.BeginBatch();
            try
            {
                var loads = isDelete ? [] : script.Transform(doc!, tx, db.Documents);
                bool deletes = script.Deletes(id, collection, isDelete, tx, db.Documents);
                items.Add(new EtlItem(id, collection, doc?.Etag ?? 0, isDelete, deletes, loads));
            }
            catch (EtlScriptException e)
            {
                errors.Add(e.Message);
            }
            output.AddRange(script.DebugOutput);
        }
        using var plan = new SqlEtlPlan(task, keepRows: true);
        if (kind == EtlKind.Sql)
            foreach (var item in items)
                plan.Add(item, a => SqlEtlDestination.Attachment(db.Documents, tx, a));
        var loadErrors = new List<string>();
        if (kind == EtlKind.Sql && items.Count > 0 && Replication.RavenConnectionString.Property(body, "PerformRolledBackTransaction") is { ValueKind: JsonValueKind.True })
        {
            var connection = Replication.RavenConnectionString.Property(body, "Connection") is { ValueKind: JsonValueKind.Object } c ? SqlConnectionString.Parse(c)
                : db.Etl.Configuration.SqlConnectionStrings.GetValueOrDefault(task.ConnectionStringName)
                  ?? throw new BadRequestException($"There is no Sql connection string named '{task.ConnectionStringName}' to run the test on.");
            using var destination = new SqlEtlDestination(task, connection, db.Documents);
            try
            {
                await destination.RunRolledBackAsync(plan, cancellation).ConfigureAwait(false);
            }
            catch (Exception e) when (e is Npgsql.NpgsqlException or InvalidOperationException or IOException)
            {
                loadErrors.Add(e.Message);
            }
        }
        return new Result(task, errors, loadErrors, output, plan.Deletes(), plan.Copies(), items);
    }

    /// <summary>RavenDB's <c>SqlEtlTestScriptResult</c>: <c>Summary</c> per table of its commands and their parameters (a COPY's rows as its parameters).</summary>
    public static void WriteSql(Utf8JsonWriter w, Result r)
    {
        w.WriteStartObject();
        WriteStrings(w, "TransformationErrors", r.TransformationErrors);
        WriteStrings(w, "LoadErrors", r.LoadErrors);
        w.WriteStartArray("SlowSqlWarnings");
        w.WriteEndArray();
        w.WriteStartArray("Summary");
        var tables = r.Deletes.Select(d => d.Table).Concat(r.Copies.Select(c => c.Table)).Distinct(StringComparer.OrdinalIgnoreCase);
        foreach (string table in tables)
        {
            w.WriteStartObject();
            w.WriteString("TableName", table);
            w.WriteStartArray("Commands");
            foreach (var d in r.Deletes.Where(d => d.Table == table))
            {
                w.WriteStartObject();
                w.WriteString("CommandText", d.Text);
                w.WriteStartArray("Params");
                foreach (var (name, value) in d.Parameters)
                {
                    w.WriteStartObject();
                    w.WriteString("Key", "@" + name);
                    w.WriteString("Value", value is string[] ids ? "{" + string.Join(", ", ids.Select(SqlEtlPlan.Literal)) + "}" : Shown(value));
                    w.WriteEndObject();
                }
                w.WriteEndArray();
                w.WriteEndObject();
            }
            foreach (var c in r.Copies.Where(c => c.Table == table))
            {
                foreach (var row in c.Rows!)
                {
                    w.WriteStartObject();
                    w.WriteString("CommandText", c.Text);
                    w.WriteStartArray("Params");
                    for (int i = 0; i < c.Columns.Count; i++)
                    {
                        w.WriteStartObject();
                        w.WriteString("Key", c.Columns[i]);
                        w.WriteString("Value", Shown(c.Value(row, i)));
                        w.WriteEndObject();
                    }
                    w.WriteEndArray();
                    w.WriteEndObject();
                }
            }
            w.WriteEndArray();
            w.WriteEndObject();
        }
        w.WriteEndArray();
        WriteStrings(w, "DebugOutput", r.DebugOutput);
        w.WriteEndObject();
    }

    /// <summary>RavenDB ETL's test result: the documents the destination would be sent, and the deletes before them.</summary>
    public static void WriteRaven(Utf8JsonWriter w, Result r)
    {
        string postfix = r.Task.Transforms[0].DocumentIdPostfix ?? "";
        w.WriteStartObject();
        WriteStrings(w, "TransformationErrors", r.TransformationErrors);
        w.WriteStartArray("Commands");
        foreach (var item in r.Items)
        {
            foreach (var load in item.Loads.OfType<EtlLoad.RavenDocument>())
            {
                w.WriteStartObject();
                w.WriteString("Type", "PUT");
                w.WriteString("Collection", load.Collection);
                w.WriteString("Id", load.Collection.Equals(item.Collection, StringComparison.OrdinalIgnoreCase) ? item.Id + postfix : $"{item.Id}/{load.Collection.ToLowerInvariant()}/...");
                w.WritePropertyName("Document");
                w.WriteRawValue(load.Json, skipInputValidation: true);
                WriteStrings(w, "Attachments", load.Attachments.Select(a => a.Name).ToList());
                WriteStrings(w, "Counters", load.Counters);
                WriteStrings(w, "TimeSeries", load.TimeSeries.Select(t => t.Name).ToList());
                w.WriteEndObject();
            }
        }
        w.WriteEndArray();
        WriteStrings(w, "DebugOutput", r.DebugOutput);
        w.WriteEndObject();
    }

    /// <summary>A value as RavenDB's summary shows it: text quoted, NULL, binary content as a placeholder.</summary>
    private static string Shown(object? value) =>
        value is EtlLoad.AttachmentContent ? "<binary_data>" : PostgresCopyText.Text(value, _ => null) is { } text ? (value is string or EtlLoad.JsonText or DateTime ? SqlEtlPlan.Literal(text) : text) : "NULL";

    private static void WriteStrings(Utf8JsonWriter w, string name, IReadOnlyList<string> values)
    {
        w.WriteStartArray(name);
        foreach (string v in values)
            w.WriteStringValue(v);
        w.WriteEndArray();
    }
}
