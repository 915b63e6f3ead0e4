namespace RavenLite.Server.Etl;

/// <summary>
/// Values in PostgreSQL's COPY text format (one row per line, columns by tab, <c>\N</c> for null, backslash escapes),
/// which the server parses into each column's type as it would a literal: numbers, booleans, text, JSON, dates,
/// arrays (<c>{a,b}</c>) and bytea (<c>\x..</c>).
/// </summary>
internal static class PostgresCopyText
{
    /// <summary>Row <paramref name="row"/> of <paramref name="copy"/> as one line.</summary>
    public static void WriteRow(TextWriter w, SqlEtlPlan.Copy copy, (string Id, EtlLoad.SqlRow Row) row, Func<EtlLoad.AttachmentContent, byte[]?> attachment)
    {
        for (int i = 0; i < copy.Columns.Count; i++)
        {
            if (i > 0)
                w.Write('\t');
            var value = copy.Value(row, i);
            if (value is double d)
                WriteNumber(w, d); // the common case, formatted in place (no string per value)
            else if (Text(value, attachment) is { } text)
                Escape(w, text);
            else
                w.Write("\\N");
        }
        w.Write('\n');
    }

    /// <summary>The value as the literal PostgreSQL reads; null for SQL NULL.</summary>
    public static string? Text(object? value, Func<EtlLoad.AttachmentContent, byte[]?> attachment) => value switch
    {
        null => null,
        string s => s,
        double d => Number(d),
        bool b => b ? "t" : "f",
        DateTime t => t.ToString("o", CultureInfo.InvariantCulture),
        EtlLoad.JsonText j => j.Json,
        EtlLoad.AttachmentContent a => attachment(a) is { } bytes ? "\\x" + Convert.ToHexString(bytes) : null,
        EtlLoad.TypedValue { Value: object?[] items } => "{" + string.Join(',', items.Select(x => ArrayElement(Text(x, attachment)))) + "}",
        EtlLoad.TypedValue typed => Text(typed.Value, attachment),
        _ => Convert.ToString(value, CultureInfo.InvariantCulture),
    };

    private static void WriteNumber(TextWriter w, double d)
    {
        Span<char> chars = stackalloc char[32];
        bool integral = d == Math.Floor(d) && Math.Abs(d) < 1e15;
        if (integral ? ((long)d).TryFormat(chars, out int n, default, CultureInfo.InvariantCulture) : d.TryFormat(chars, out n, "R", CultureInfo.InvariantCulture))
            w.Write(chars[..n]);
        else
            w.Write(Number(d));
    }

    /// <summary>An integral double prints as an integer, so integer columns take it.</summary>
    private static string Number(double d) =>
        d == Math.Floor(d) && Math.Abs(d) < 1e15 ? ((long)d).ToString(CultureInfo.InvariantCulture) : d.ToString("R", CultureInfo.InvariantCulture);

    private static string ArrayElement(string? s) =>
        s == null ? "NULL" : "\"" + s.Replace("\\", "\\\\", StringComparison.Ordinal).Replace("\"", "\\\"", StringComparison.Ordinal) + "\"";

    private static void Escape(TextWriter w, string s)
    {
        if (s.AsSpan().IndexOfAny("\\\t\n\r") < 0)
        {
            w.Write(s);
            return;
        }
        foreach (char c in s)
        {
            switch (c)
            {
                case '\\': w.Write("\\\\"); break;
                case '\t': w.Write("\\t"); break;
                case '\n': w.Write("\\n"); break;
                case '\r': w.Write("\\r"); break;
                default: w.Write(c); break;
            }
        }
    }
}
