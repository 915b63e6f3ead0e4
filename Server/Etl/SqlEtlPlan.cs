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

    /// <summary>
    /// A COPY of rows into a table: its text and columns — the document id column first, then the script's columns
    /// without it — and the rows, each a source document's id and the row the script loaded for it.
    /// </summary>
    public sealed class Copy(string table, string text, string[] columns, int[] source)
    {
        public string Table { get; } = table;

        public string Text { get; } = text;

        public IReadOnlyList<string> Columns { get; } = columns;

        public List<(string Id, EtlLoad.SqlRow Row)> Rows { get; } = [];

        /// <summary>Column <paramref name="column"/>'s value in row <paramref name="row"/>.</summary>
        public object? Value((string Id, EtlLoad.SqlRow Row) row, int column) => column == 0 ? row.Id : row.Row.Values[source[column]];
    }

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
            // One COPY per column set the script used for the table (the arrays are shared by the script's rows).
            var byColumns = new Dictionary<string[], Copy>(ReferenceEqualityComparer.Instance);
            foreach (var item in items)
                foreach (var load in item.Loads)
                {
                    if (load is not EtlLoad.SqlRow row || !row.Table.Equals(table.TableName, StringComparison.OrdinalIgnoreCase))
                        continue;
                    if (!byColumns.TryGetValue(row.Columns, out var copy))
                    {
                        copy = CopyOf(task, table, row.Columns);
                        byColumns.Add(row.Columns, copy);
                        copies.Add(copy);
                    }
                    copy.Rows.Add((item.Id, row));
                }
        }
        return (deletes, copies);
    }

    /// <summary>The document id column is the source document's id whatever the script set it to (RavenDB's rule).</summary>
    private static Copy CopyOf(EtlTask task, SqlEtlTable table, string[] scriptColumns)
    {
        var columns = new List<string> { table.DocumentIdColumn };
        var source = new List<int> { -1 };
        for (int i = 0; i < scriptColumns.Length; i++)
            if (!scriptColumns[i].Equals(table.DocumentIdColumn, StringComparison.Ordinal))
            {
                columns.Add(scriptColumns[i]);
                source.Add(i);
            }
        string text = $"COPY {Table(task, table.TableName)} ({string.Join(", ", columns.Select(Quote))}) FROM STDIN";
        return new Copy(table.TableName, text, [.. columns], [.. source]);
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
