using System.Globalization;
using System.Text.Json.Nodes;
using RavenLite.Client.Backups;
using RavenLite.Client.Http;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Etl;

/// <summary>A PostgreSQL database SQL ETL loads into (RavenDB's <c>SqlConnectionString</c>; the server takes FactoryName <c>Npgsql</c> only).</summary>
/// <param name="Name">The connection string's name, which tasks refer to.</param>
/// <param name="ConnectionString">An Npgsql connection string.</param>
/// <param name="FactoryName">The provider: <c>Npgsql</c>.</param>
public sealed record SqlConnectionString(string Name, string ConnectionString, string FactoryName = "Npgsql");

/// <summary>RavenDB's <c>Transformation</c>: a script run on every change of a document of its collections.</summary>
public sealed class Transformation
{
    /// <summary>The transformation's name (unique in its task).</summary>
    public string Name { get; set; } = "";

    /// <summary>The collections whose documents it transforms.</summary>
    public IList<string> Collections { get; init; } = [];

    /// <summary>True to transform the documents of every collection (then no <see cref="Collections"/>).</summary>
    public bool ApplyToAllDocuments { get; set; }

    /// <summary>The script: <c>loadTo&lt;Target&gt;(obj)</c> per row or document (RavenDB ETL: empty loads the document as it is).</summary>
    public string Script { get; set; } = "";

    /// <summary>True to keep it off.</summary>
    public bool Disabled { get; set; }

    /// <summary>RavenDB ETL: appended to the ids of the documents it loads.</summary>
    public string? DocumentIdPostfix { get; set; }

    internal JsonObject ToJson() => new()
    {
        [nameof(Name)] = Name,
        [nameof(Collections)] = new JsonArray([.. Collections.Select(c => (JsonNode?)c)]),
        [nameof(ApplyToAllDocuments)] = ApplyToAllDocuments,
        [nameof(Script)] = Script,
        [nameof(Disabled)] = Disabled,
        [nameof(DocumentIdPostfix)] = DocumentIdPostfix,
    };
}

/// <summary>What RavenDB's <c>RavenEtlConfiguration</c> and <c>SqlEtlConfiguration</c> share.</summary>
public abstract class EtlConfiguration
{
    /// <summary>0 for a new task (the server gives it an id).</summary>
    public long TaskId { get; set; }

    /// <summary>The task's name (unique in the database).</summary>
    public string Name { get; set; } = "";

    /// <summary>The connection string it loads through.</summary>
    public string ConnectionStringName { get; set; } = "";

    /// <summary>Its transformations.</summary>
    public IList<Transformation> Transforms { get; init; } = [];

    /// <summary>True to keep it off.</summary>
    public bool Disabled { get; set; }

    /// <summary>The node that should run it in a group (null: the cluster picks).</summary>
    public string? MentorNode { get; set; }

    internal abstract JsonObject ToJson();

    private protected JsonObject Common(string type) => new()
    {
        [nameof(TaskId)] = TaskId,
        [nameof(Name)] = Name,
        ["EtlType"] = type,
        [nameof(ConnectionStringName)] = ConnectionStringName,
        [nameof(Transforms)] = new JsonArray([.. Transforms.Select(t => (JsonNode?)t.ToJson())]),
        [nameof(Disabled)] = Disabled,
        [nameof(MentorNode)] = MentorNode,
    };
}

/// <summary>RavenDB ETL: documents transformed into a database on this or another server.</summary>
public sealed class RavenEtlConfiguration : EtlConfiguration
{
    /// <summary>Seconds one load request may take (null: 30).</summary>
    public int? LoadRequestTimeoutInSec { get; set; }

    internal override JsonObject ToJson()
    {
        var json = Common("Raven");
        json[nameof(LoadRequestTimeoutInSec)] = LoadRequestTimeoutInSec;
        return json;
    }
}

/// <summary>RavenDB's <c>SqlEtlTable</c>: a table rows are loaded to, and the column holding the source document's id.</summary>
/// <param name="TableName">The table (schema-qualified with a dot if need be).</param>
/// <param name="DocumentIdColumn">The column that holds the source document's id.</param>
/// <param name="InsertOnlyMode">True to insert without deleting a document's earlier rows first.</param>
public sealed record SqlEtlTable(string TableName, string DocumentIdColumn, bool InsertOnlyMode = false);

/// <summary>SQL ETL: documents transformed into rows of PostgreSQL tables.</summary>
public sealed class SqlEtlConfiguration : EtlConfiguration
{
    /// <summary>The tables, in insert order (deletes go in the reverse order).</summary>
    public IList<SqlEtlTable> SqlTables { get; init; } = [];

    /// <summary>Deletes pass the ids as parameters (default) rather than literals.</summary>
    public bool ParameterizeDeletes { get; set; } = true;

    /// <summary>Table names are quoted (default).</summary>
    public bool QuoteTables { get; set; } = true;

    /// <summary>Seconds a statement may run (null: the provider's default).</summary>
    public int? CommandTimeout { get; set; }

    internal override JsonObject ToJson()
    {
        var json = Common("Sql");
        json[nameof(SqlTables)] = new JsonArray([.. SqlTables.Select(t => (JsonNode?)new JsonObject
        {
            ["TableName"] = t.TableName,
            ["DocumentIdColumn"] = t.DocumentIdColumn,
            ["InsertOnlyMode"] = t.InsertOnlyMode,
        })]);
        json[nameof(ParameterizeDeletes)] = ParameterizeDeletes;
        json[nameof(QuoteTables)] = QuoteTables;
        json[nameof(CommandTimeout)] = CommandTimeout;
        return json;
    }
}

/// <summary><c>PUT /databases/{db}/admin/etl</c>: creates an ETL task; returns its task id.</summary>
public sealed class AddEtlOperation(EtlConfiguration configuration) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => $"/databases/{Uri.EscapeDataString(db)}/admin/etl", configuration.ToJson(), "TaskId", HttpMethod.Put);
}

/// <summary><c>PUT /databases/{db}/admin/etl?id=</c>: replaces a task's configuration (its transformations go on from where they were).</summary>
public sealed class UpdateEtlOperation(long taskId, EtlConfiguration configuration) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => string.Create(CultureInfo.InvariantCulture, $"/databases/{Uri.EscapeDataString(db)}/admin/etl?id={taskId}"), configuration.ToJson(), "TaskId", HttpMethod.Put);
}

/// <summary><c>RESET /databases/{db}/admin/etl</c>: the transformation loads everything again from the first document.</summary>
public sealed class ResetEtlOperation(string configurationName, string transformationName) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => $"/databases/{Uri.EscapeDataString(db)}/admin/etl?configurationName={Uri.EscapeDataString(configurationName)}&transformationName={Uri.EscapeDataString(transformationName)}",
            new JsonObject(), "RaftCommandIndex", new HttpMethod("RESET"));
}

/// <summary><c>POST /databases/{db}/admin/tasks/state</c>: enables or disables an ongoing task (<c>RavenEtl</c>, <c>SqlEtl</c>, <c>Replication</c>, <c>Backup</c>).</summary>
public sealed class ToggleOngoingTaskStateOperation(long taskId, string taskType, bool disable) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => string.Create(CultureInfo.InvariantCulture, $"/databases/{Uri.EscapeDataString(db)}/admin/tasks/state?key={taskId}&type={taskType}&disable={(disable ? "true" : "false")}"),
            null, "TaskId");
}

/// <summary><c>DELETE /databases/{db}/admin/tasks?id=&amp;type=</c>: deletes an ongoing task.</summary>
public sealed class DeleteOngoingTaskOperation(long taskId, string taskType) : IMaintenanceOperation<long>
{
    /// <inheritdoc />
    public RavenCommand<long> GetCommand(DocumentConventions conventions) =>
        new PostForNumberCommand(db => string.Create(CultureInfo.InvariantCulture, $"/databases/{Uri.EscapeDataString(db)}/admin/tasks?id={taskId}&type={taskType}"), null, "TaskId", HttpMethod.Delete);
}

/// <summary>A transformation's progress: its state (Running, Reconnect, Error, Disabled), last etag loaded, lag and error.</summary>
public sealed record EtlTransformationInfo(string Name, string State, long LastProcessedEtag, long EtagLag, double TimeLagMs, string? Error);

/// <summary>An ETL task's state (RavenDB's <c>OngoingTaskRavenEtl</c> / <c>OngoingTaskSqlEtl</c>, with RavenLite's progress).</summary>
public sealed record EtlTaskInfo(long TaskId, string Name, string TaskState, string ConnectionStatus, string? Error, IReadOnlyList<EtlTransformationInfo> Transformations);

/// <summary><c>GET /databases/{db}/task?key=&amp;type=RavenEtl|SqlEtl</c>: an ETL task's state and progress.</summary>
public sealed class GetEtlTaskInfoOperation(long taskId, string taskType) : IMaintenanceOperation<EtlTaskInfo>
{
    /// <inheritdoc />
    public RavenCommand<EtlTaskInfo> GetCommand(DocumentConventions conventions) => new InfoCommand(taskId, taskType);

    private sealed class InfoCommand(long taskId, string taskType) : RavenCommand<EtlTaskInfo>
    {
        public override HttpRequestMessage CreateRequest(string? database) =>
            new(HttpMethod.Get, string.Create(CultureInfo.InvariantCulture, $"{DatabasePath(database)}/task?key={taskId}&type={taskType}"));

        public override async Task<EtlTaskInfo> ParseResponseAsync(HttpResponseMessage response, CancellationToken cancellationToken)
        {
            var t = await ReadObjectAsync(response, cancellationToken).ConfigureAwait(false);
            var transformations = (t["Transformations"] as JsonArray ?? []).OfType<JsonObject>().Select(x => new EtlTransformationInfo((string)x["Name"]!, (string)x["State"]!,
                (long?)x["LastProcessedEtag"] ?? 0, (long?)x["EtagLag"] ?? 0, (double?)x["TimeLagMs"] ?? 0, (string?)x["Error"])).ToList();
            return new EtlTaskInfo((long)t["TaskId"]!, (string)t["TaskName"]!, (string)t["TaskState"]!, (string)t["TaskConnectionStatus"]!, (string?)t["Error"], transformations);
        }
    }
}
