namespace RavenLite.Server.Etl;

/// <summary>
/// The statements an SQL ETL batch runs in its one destination transaction (docs/etl.md "SQL ETL"), built as the
/// batch is read: for each table not in insert-only mode, in reverse table order, a delete of the rows of every
/// changed document (<c>DELETE FROM t WHERE "col" = ANY(@ids)</c>, a deleted document's id matched lower-cased, as its
/// tombstone keeps it); then, in table order, the rows the scripts loaded, one <c>COPY t (..) FROM STDIN</c> per table
/// and column set, each row written as COPY text when it is added.
/// </summary>
internal sealed class SqlEtlPlan(EtlTask task, bool keepRows = false) : IDisposable
{
    private readonly HashSet<string> _updated = new(StringComparer.Ordinal);
    private readonly HashSet<string> _deleted = new(StringComparer.Ordinal);
    private readonly List<Copy> _copies = [];

    /// <summary>A delete: its text and parameters.</summary>
    public sealed record Delete(string Table, string Text, IReadOnlyList<(string Name, object? Value)> Parameters);

    /// <summary>
    /// A COPY of rows into a table: its text and columns — the document id column first, then the script's columns
    /// without it — and its rows as COPY text (with <c>keepRows</c>, also as values, for the test endpoint).
    /// </summary>
    public sealed class Copy : IDisposable
    {
        private readonly int[] _source;
        private readonly PooledText _text = new();

        internal Copy(string table, int tableIndex, string text, string[] scriptColumns, string[] columns, int[] source, bool keepRows)
        {
            Table = table;
            TableIndex = tableIndex;
            Text = text;
            ScriptColumns = scriptColumns;
            Columns = columns;
            _source = source;
            Rows = keepRows ? [] : null;
        }

        public string Table { get; }

        internal int TableIndex { get; }

        public string Text { get; }

        /// <summary>The script's column array the rows share.</summary>
        internal string[] ScriptColumns { get; }

        public IReadOnlyList<string> Columns { get; }

        public int RowCount { get; private set; }

        /// <summary>The rows as values (only when the plan keeps them): a source document's id and the row loaded for it.</summary>
        public List<(string Id, EtlLoad.SqlRow Row)>? Rows { get; }

        /// <summary>Column <paramref name="column"/>'s value in row <paramref name="row"/>.</summary>
        public object? Value((string Id, EtlLoad.SqlRow Row) row, int column) => column == 0 ? row.Id : row.Row.Values[_source[column]];

        internal void Add(string id, EtlLoad.SqlRow row, Func<EtlLoad.AttachmentContent, byte[]?> attachment)
        {
            PostgresCopyText.WriteRow(_text, this, (id, row), attachment);
            RowCount++;
            Rows?.Add((id, row));
        }

        /// <summary>The rows' COPY text, to the COPY's writer.</summary>
        public void WriteTo(TextWriter w) => _text.CopyTo(w);

        public void Dispose() => _text.Dispose();
    }

    /// <summary>Nothing to run: no deletes and no rows.</summary>
    public bool IsEmpty => _updated.Count == 0 && _deleted.Count == 0 && _copies.Count == 0;

    /// <summary>Adds a change: its deletion (when it deletes what was loaded before) and its rows, written at once.</summary>
    public void Add(EtlItem item, Func<EtlLoad.AttachmentContent, byte[]?> attachment)
    {
        ArgumentNullException.ThrowIfNull(item);
        if (item.DeletesPrevious)
            (item.Deleted ? _deleted : _updated).Add(item.Id);
        foreach (var load in item.Loads)
        {
            if (load is not EtlLoad.SqlRow row)
                continue;
            int tableIndex = TableIndex(row.Table);
            if (tableIndex < 0)
                continue; // the script was checked against the tables when the task was put
            // One COPY per table and column set (the script's rows share their column arrays).
            var copy = _copies.Find(c => c.TableIndex == tableIndex && ReferenceEquals(c.ScriptColumns, row.Columns));
            if (copy == null)
            {
                copy = CopyOf(task.SqlTables[tableIndex], tableIndex, row.Columns);
                _copies.Add(copy);
            }
            copy.Add(item.Id, row, attachment);
        }
    }

    private int TableIndex(string table)
    {
        for (int i = 0; i < task.SqlTables.Count; i++)
            if (task.SqlTables[i].TableName.Equals(table, StringComparison.OrdinalIgnoreCase))
                return i;
        return -1;
    }

    /// <summary>The deletes, in reverse table order.</summary>
    public List<Delete> Deletes()
    {
        var deletes = new List<Delete>();
        string[] updated = [.. _updated], deleted = [.. _deleted];
        foreach (var table in Enumerable.Reverse(task.SqlTables))
        {
            if (table.InsertOnlyMode)
                continue;
            string name = Table(task, table.TableName), column = Quote(table.DocumentIdColumn);
            if (updated.Length > 0)
                deletes.Add(DeleteOf(task, table, name, column, updated));
            if (deleted.Length > 0)
                deletes.Add(DeleteOf(task, table, name, $"lower({column})", deleted));
        }
        return deletes;
    }

    /// <summary>The copies, in table order (then in the order their column sets first came).</summary>
    public List<Copy> Copies() => [.. _copies.OrderBy(c => c.TableIndex)];

    /// <summary>The document id column is the source document's id whatever the script set it to (RavenDB's rule).</summary>
    private Copy CopyOf(SqlEtlTable table, int tableIndex, string[] scriptColumns)
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
        return new Copy(table.TableName, tableIndex, text, scriptColumns, [.. columns], [.. source], keepRows);
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

    public void Dispose()
    {
        foreach (var copy in _copies)
            copy.Dispose();
    }
}
