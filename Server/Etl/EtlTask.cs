using RavenLite.Server.Replication;

namespace RavenLite.Server.Etl;

/// <summary>The destination kind of an ETL task: another RavenDB-protocol database, or PostgreSQL.</summary>
public enum EtlKind
{
    Raven,
    Sql,
}

/// <summary>RavenDB's <c>Transformation</c>: a script run on every change of a document of its collections.</summary>
public sealed record EtlTransformation(string Name, IReadOnlyList<string> Collections, bool ApplyToAllDocuments, string Script, bool Disabled, string? DocumentIdPostfix)
{
    public static EtlTransformation Parse(JsonElement json, int index)
    {
        if (json.ValueKind != JsonValueKind.Object)
            throw new BadRequestException($"Transforms[{index}] must be an object.");
        string name = RavenConnectionString.Property(json, nameof(Name)) is { ValueKind: JsonValueKind.String } n && n.GetString() is { Length: > 0 } s ? s
            : throw new BadRequestException($"Transforms[{index}] needs a Name.");
        var collections = new List<string>();
        if (RavenConnectionString.Property(json, nameof(Collections)) is { ValueKind: JsonValueKind.Array } list)
            foreach (var c in list.EnumerateArray())
                if (c.GetString() is { Length: > 0 } collection)
                    collections.Add(collection);
        bool all = RavenConnectionString.Property(json, nameof(ApplyToAllDocuments)) is { ValueKind: JsonValueKind.True };
        if (all && collections.Count > 0)
            throw new BadRequestException($"Transformation '{name}': ApplyToAllDocuments runs on every collection, so it takes no Collections.");
        if (!all && collections.Count == 0)
            throw new BadRequestException($"Transformation '{name}' names no Collections (or set ApplyToAllDocuments).");
        string script = RavenConnectionString.Property(json, nameof(Script)) is { ValueKind: JsonValueKind.String } sc ? sc.GetString() ?? "" : "";
        bool disabled = RavenConnectionString.Property(json, nameof(Disabled)) is { ValueKind: JsonValueKind.True };
        string? postfix = RavenConnectionString.Property(json, nameof(DocumentIdPostfix)) is { ValueKind: JsonValueKind.String } p && p.GetString() is { Length: > 0 } ps ? ps : null;
        return new EtlTransformation(name, collections, all, script, disabled, postfix);
    }

    /// <summary>True when a document of <paramref name="collection"/> goes through this transformation.</summary>
    public bool Covers(string collection) =>
        ApplyToAllDocuments ? !collection.StartsWith('@') : Collections.Contains(collection, StringComparer.OrdinalIgnoreCase);

    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteString(nameof(Name), Name);
        w.WriteStartArray(nameof(Collections));
        foreach (string c in Collections)
            w.WriteStringValue(c);
        w.WriteEndArray();
        w.WriteBoolean(nameof(ApplyToAllDocuments), ApplyToAllDocuments);
        w.WriteString(nameof(Script), Script);
        w.WriteBoolean(nameof(Disabled), Disabled);
        w.WriteString(nameof(DocumentIdPostfix), DocumentIdPostfix);
        w.WriteEndObject();
    }
}

/// <summary>RavenDB's <c>SqlEtlTable</c>: a table rows are loaded to, and the column that holds the source document's id.</summary>
public sealed record SqlEtlTable(string TableName, string DocumentIdColumn, bool InsertOnlyMode)
{
    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteString(nameof(TableName), TableName);
        w.WriteString(nameof(DocumentIdColumn), DocumentIdColumn);
        w.WriteBoolean(nameof(InsertOnlyMode), InsertOnlyMode);
        w.WriteEndObject();
    }
}

/// <summary>
/// RavenDB's <c>RavenEtlConfiguration</c> or <c>SqlEtlConfiguration</c> (docs/etl.md): the transformations, the
/// connection string of the destination, and for SQL the tables and how statements are issued.
/// </summary>
public sealed record EtlTask(long TaskId, string Name, EtlKind Kind, string ConnectionStringName, IReadOnlyList<EtlTransformation> Transforms, bool Disabled, string? MentorNode)
{
    /// <summary>SQL: the tables, in the order rows are inserted (deletes run in the reverse order).</summary>
    public IReadOnlyList<SqlEtlTable> SqlTables { get; init; } = [];

    /// <summary>SQL: deletes pass the document ids as parameters (true, RavenDB's default) or inline them as literals.</summary>
    public bool ParameterizeDeletes { get; init; } = true;

    /// <summary>SQL: table names are quoted (RavenDB's default true).</summary>
    public bool QuoteTables { get; init; } = true;

    /// <summary>SQL: seconds a statement may run; null: Npgsql's default.</summary>
    public int? CommandTimeout { get; init; }

    /// <summary>Raven: seconds a load request may take; null: the default.</summary>
    public int? LoadRequestTimeoutInSec { get; init; }

    /// <summary>Reads a configuration as the clients send it (<c>EtlType</c> Raven or Sql); 400 when it is not one.</summary>
    public static EtlTask Parse(JsonElement json)
    {
        if (json.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("An ETL configuration is a JSON object.");
        string type = RavenConnectionString.Property(json, "EtlType") is { ValueKind: JsonValueKind.String } t ? t.GetString()! : "Raven";
        var kind = type.ToUpperInvariant() switch
        {
            "RAVEN" => EtlKind.Raven,
            "SQL" => EtlKind.Sql,
            _ => throw new BadRequestException($"EtlType '{type}' is not supported here; this server runs Raven and Sql ETL."),
        };
        long id = RavenConnectionString.Property(json, nameof(TaskId)) is { ValueKind: JsonValueKind.Number } n ? n.GetInt64() : 0;
        string name = RavenConnectionString.Text(json, nameof(Name));
        string connection = RavenConnectionString.Text(json, nameof(ConnectionStringName));
        var transforms = new List<EtlTransformation>();
        if (RavenConnectionString.Property(json, nameof(Transforms)) is { ValueKind: JsonValueKind.Array } list)
        {
            int i = 0;
            foreach (var item in list.EnumerateArray())
                transforms.Add(EtlTransformation.Parse(item, i++));
        }
        if (transforms.Count == 0)
            throw new BadRequestException($"ETL '{name}' has no Transforms.");
        if (transforms.GroupBy(x => x.Name, StringComparer.OrdinalIgnoreCase).FirstOrDefault(g => g.Count() > 1) is { } twice)
            throw new BadRequestException($"ETL '{name}' has two transformations named '{twice.Key}'.");
        bool disabled = RavenConnectionString.Property(json, nameof(Disabled)) is { ValueKind: JsonValueKind.True };
        string? mentor = RavenConnectionString.Property(json, nameof(MentorNode)) is { ValueKind: JsonValueKind.String } m && m.GetString() is { Length: > 0 } tag ? tag : null;
        var task = new EtlTask(id, name, kind, connection, transforms, disabled, mentor)
        {
            LoadRequestTimeoutInSec = Int(json, nameof(LoadRequestTimeoutInSec)),
        };
        if (kind == EtlKind.Sql)
        {
            var tables = new List<SqlEtlTable>();
            if (RavenConnectionString.Property(json, nameof(SqlTables)) is { ValueKind: JsonValueKind.Array } tablesJson)
            {
                foreach (var tj in tablesJson.EnumerateArray())
                    tables.Add(new SqlEtlTable(RavenConnectionString.Text(tj, nameof(SqlEtlTable.TableName)), RavenConnectionString.Text(tj, nameof(SqlEtlTable.DocumentIdColumn)),
                        RavenConnectionString.Property(tj, nameof(SqlEtlTable.InsertOnlyMode)) is { ValueKind: JsonValueKind.True }));
            }
            if (tables.Count == 0)
                throw new BadRequestException($"SQL ETL '{name}' has no SqlTables.");
            if (transforms.FirstOrDefault(x => x.Script.Trim().Length == 0) is { } empty)
                throw new BadRequestException($"SQL ETL '{name}': transformation '{empty.Name}' has an empty script; an SQL ETL script must call loadTo<Table>(row).");
            task = task with
            {
                SqlTables = tables,
                ParameterizeDeletes = RavenConnectionString.Property(json, nameof(ParameterizeDeletes)) is not { ValueKind: JsonValueKind.False },
                QuoteTables = RavenConnectionString.Property(json, nameof(QuoteTables)) is not { ValueKind: JsonValueKind.False },
                CommandTimeout = Int(json, nameof(CommandTimeout)),
            };
        }
        foreach (var transform in transforms)
            EtlScript.Check(task, transform);
        return task;
    }

    private static int? Int(JsonElement json, string name) =>
        RavenConnectionString.Property(json, name) is { ValueKind: JsonValueKind.Number } v && v.TryGetInt32(out int i) ? (i > 0 ? i : throw new BadRequestException($"{name} must be positive.")) : null;

    /// <summary>RavenDB's task type: <c>RavenEtl</c> or <c>SqlEtl</c>.</summary>
    public string TaskType => Kind == EtlKind.Raven ? "RavenEtl" : "SqlEtl";

    /// <summary>
    /// Writes it as stored and as the clients send it; <paramref name="withType"/> false leaves <c>EtlType</c> out, as
    /// the task listings do (RavenDB's Node client assigns the configuration onto a class where it is read-only).
    /// </summary>
    public void Write(Utf8JsonWriter w, bool withType = true)
    {
        w.WriteStartObject();
        w.WriteNumber(nameof(TaskId), TaskId);
        w.WriteString(nameof(Name), Name);
        if (withType)
            w.WriteString("EtlType", Kind.ToString());
        w.WriteString(nameof(ConnectionStringName), ConnectionStringName);
        w.WriteBoolean(nameof(Disabled), Disabled);
        w.WriteString(nameof(MentorNode), MentorNode);
        w.WriteStartArray(nameof(Transforms));
        foreach (var t in Transforms)
            t.Write(w);
        w.WriteEndArray();
        if (LoadRequestTimeoutInSec is { } lt)
            w.WriteNumber(nameof(LoadRequestTimeoutInSec), lt);
        if (Kind == EtlKind.Sql)
        {
            w.WriteStartArray(nameof(SqlTables));
            foreach (var t in SqlTables)
                t.Write(w);
            w.WriteEndArray();
            w.WriteBoolean(nameof(ParameterizeDeletes), ParameterizeDeletes);
            w.WriteBoolean(nameof(QuoteTables), QuoteTables);
            if (CommandTimeout is { } ct)
                w.WriteNumber(nameof(CommandTimeout), ct);
            else
                w.WriteNull(nameof(CommandTimeout));
        }
        w.WriteEndObject();
    }
}
