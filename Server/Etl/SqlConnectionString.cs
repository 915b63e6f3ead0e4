using RavenLite.Server.Replication;

namespace RavenLite.Server.Etl;

/// <summary>
/// RavenDB's <c>SqlConnectionString</c>: a relational database an SQL ETL task loads into. RavenLite loads into
/// PostgreSQL only, through Npgsql: <c>FactoryName</c> must be <c>Npgsql</c> (RavenDB's name for it).
/// </summary>
public sealed record SqlConnectionString(string Name, string ConnectionString, string FactoryName)
{
    /// <summary>The only factory this server has.</summary>
    public const string Npgsql = "Npgsql";

    /// <summary>Reads one as the clients send it (<c>{Name, ConnectionString, FactoryName, Type: "Sql"}</c>); 400 when it is not one.</summary>
    public static SqlConnectionString Parse(JsonElement json)
    {
        if (json.ValueKind != JsonValueKind.Object)
            throw new BadRequestException("A connection string is a JSON object.");
        string name = RavenConnectionString.Text(json, nameof(Name));
        string connection = RavenConnectionString.Text(json, nameof(ConnectionString));
        string factory = RavenConnectionString.Property(json, nameof(FactoryName)) is { ValueKind: JsonValueKind.String } f && f.GetString() is { Length: > 0 } s ? s : Npgsql;
        if (!factory.Equals(Npgsql, StringComparison.OrdinalIgnoreCase))
            throw new BadRequestException($"Connection string '{name}': FactoryName '{factory}' is not supported. RavenLite's SQL ETL loads into PostgreSQL only (FactoryName 'Npgsql').");
        try
        {
            _ = new global::Npgsql.NpgsqlConnectionStringBuilder(connection);
        }
        catch (ArgumentException e)
        {
            throw new BadRequestException($"Connection string '{name}' is not a PostgreSQL connection string: {e.Message}");
        }
        return new SqlConnectionString(name, connection, Npgsql);
    }

    /// <summary>The server and database it names (for the task listing; never the password).</summary>
    public (string? Server, string? Database) Describe()
    {
        var b = new global::Npgsql.NpgsqlConnectionStringBuilder(ConnectionString);
        return (b.Port != 5432 ? $"{b.Host}:{b.Port.ToString(CultureInfo.InvariantCulture)}" : b.Host, b.Database);
    }

    public void Write(Utf8JsonWriter w)
    {
        w.WriteStartObject();
        w.WriteString(nameof(Name), Name);
        w.WriteString(nameof(ConnectionString), ConnectionString);
        w.WriteString(nameof(FactoryName), FactoryName);
        w.WriteString("Type", "Sql");
        w.WriteEndObject();
    }
}
