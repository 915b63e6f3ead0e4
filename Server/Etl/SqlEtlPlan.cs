namespace RavenLite.Server.Etl;

/// <summary>
/// The statements an SQL ETL batch runs in its one destination transaction (docs/etl.md "SQL ETL"): for each table
/// not in insert-only mode, in reverse table order, a delete of the rows of every changed document
/// (<c>DELETE FROM t WHERE "col" = ANY(@ids)</c>, a deleted document's id matched lower-cased, as its tombstone keeps it);
/// then, in table order, the rows the scripts loaded, one <c>COPY t (..) FROM STDIN</c> per table and column set.
/// </summary>
internal static class SqlEtlPlan
{
    /// <summary>A delete: its text and parameters.</summary>
    public sealed record Delete(string Table, string Text, IReadOnlyList<(string Name, object? Value)> Parameters);

    /// <summary>A COPY of rows into a table: its text, the columns and the rows (values in column order).</summary>
    public sealed record Copy(string Table, string Text, IReadOnlyList<string> Columns, IReadOnlyList<object?[]> Rows);

    public static (List<Delete> Deletes, List<Copy> Copies) Build(EtlTask task, IReadOnlyList<EtlItem> items)
    {
        var deletes = new List<Delete>();
        var updated = items.Where(i => !i.Deleted && i.DeletesPrevious).Select(i => i.Id).Distinct(StringComparer.Ordinal).ToArray();
        var deleted = items.Where(i => i.Deleted && i.DeletesPrevious).Select(i => i.Id).Distinct(StringComparer.Ordinal).ToArray();
        foreach (var table in task.SqlTables.Reverse())
        {
            if (table.InsertOnlyMode)
                continue;
            string name = Table(task, table.TableName), column = Quote(table.DocumentIdColumn);
            if (updated.Length > 0)
                deletes.Add(DeleteOf(task, table, name, column, updated));
            if (deleted.Length > 0)
                deletes.Add(DeleteOf(task, table, name, $"lower({column})", deleted));
        }
        var copies = new List<Copy>();
        foreach (var table in task.SqlTables)
        {
            var rows = items.SelectMany(i => i.Loads.OfType<EtlLoad.SqlRow>().Where(r => r.Table.Equals(table.TableName, StringComparison.OrdinalIgnoreCase)).Select(r => (i.Id, Row: r)));
            // The document id column is the source document's id whatever the script set it to (RavenDB's rule).
            foreach (var group in rows.Select(r => WithId(table.DocumentIdColumn, r.Id, r.Row)).GroupBy(r => string.Join('\u0001', r.Select(c => c.Column))))
            {
                var columns = group.First().Select(c => c.Column).ToList();
                string text = $"COPY {Table(task, table.TableName)} ({string.Join(", ", columns.Select(Quote))}) FROM STDIN";
                copies.Add(new Copy(table.TableName, text, columns, [.. group.Select(r => r.Select(c => c.Value).ToArray())]));
            }
        }
        return (deletes, copies);
    }

    private static List<(string Column, object? Value)> WithId(string idColumn, string id, EtlLoad.SqlRow row)
    {
        var columns = new List<(string Column, object? Value)>(row.Columns.Count + 1) { (idColumn, id) };
        foreach (var c in row.Columns)
            if (!c.Column.Equals(idColumn, StringComparison.Ordinal))
                columns.Add(c);
        return columns;
    }

    private static Delete DeleteOf(EtlTask task, SqlEtlTable table, string name, string column, string[] ids) =>
        task.ParameterizeDeletes
            ? new Delete(table.TableName, $"DELETE FROM {name} WHERE {column} = ANY(@ids)", [("ids", ids)])
            : new Delete(table.TableName, $"DELETE FROM {name} WHERE {column} IN ({string.Join(", ", ids.Select(Literal))})", []);

    private static string Table(EtlTask task, string name) =>
        task.QuoteTables ? string.Join('.', name.Split('.').Select(Quote)) : name;

    /// <summary>A PostgreSQL quoted identifier.</summary>
    public static string Quote(string identifier) => "\"" + identifier.Replace("\"", "\"\"", StringComparison.Ordinal) + "\"";

    /// <summary>A PostgreSQL string literal (standard_conforming_strings: only the quote is doubled).</summary>
    public static string Literal(string value) => "'" + value.Replace("'", "''", StringComparison.Ordinal) + "'";
}
