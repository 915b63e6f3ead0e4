using System.IO.Pipelines;
using RavenLite.Server.BulkInsert;
using RavenLite.Server.Documents;

namespace RavenLite.Server.Tests.BulkInsert;

/// <summary>The bulk-insert stream reader driven directly, so the point where one read stops and the next resumes is exact.</summary>
public sealed class BulkInsertReaderTests
{
    private static readonly string[] Names = ["plain", "q\"uote", "back\\", "\\\"", "{[}]", "\\\\\"}", "é ü \u2603"];

    /// <summary>JSON string content with quotes and backslashes as \" and \\ (JsonSerializer would write \u0022), the bytes the scanner must get right.</summary>
    private static string Escape(string s) => s.Replace("\\", "\\\\").Replace("\"", "\\\"");

    private static string Body()
    {
        var items = Names.Select((n, i) =>
            "{\"Id\":\"t/" + i + "\",\"Type\":\"PUT\",\"Document\":{\"Name\":\"" + Escape(n) + "\"" + ",\"A\":[{\"x\":\"]\"},[1,{}]],\"@metadata\":{\"@collection\":\"T\"}}}");
        return "[ " + string.Join(" ,\n", items) + " ]";
    }

    /// <summary>Feeds <paramref name="body"/> in two reads split at <paramref name="split"/>, never ending it; returns the names of the documents read.</summary>
    private static async Task<List<string>> ReadSplitAsync(DocumentsStorage docs, byte[] body, int split)
    {
        var pipe = new Pipe();
        var reader = new BulkInsertReader(pipe.Reader, docs, 1 << 20);
        var batches = new List<BulkInsertBatch>();
        BulkInsertBatch? batch = null;
        // The writer is never completed (the Node client never ends the body): the reader must see the closing ']' by itself.
        for (int p = 0; p < 2; p++)
        {
            await pipe.Writer.WriteAsync(p == 0 ? body.AsMemory(0, split) : body.AsMemory(split));
            var result = await pipe.Reader.ReadAsync();
            reader.Consume(result, () => batch ??= new BulkInsertBatch(), _ => false);
        }
        Assert.True(reader.Finished);
        var names = new List<string>();
        using var env = docs.Environment.WriteTransaction();
        var ctx = docs.BeginWrite(env);
        batch!.Execute(ctx);
        foreach (int i in Enumerable.Range(0, Names.Length))
        {
            var d = ctx.Get("t/" + i)!;
            using var parsed = JsonDocument.Parse(d.Json);
            names.Add(parsed.RootElement.GetProperty("Name").GetString()!);
        }
        batch.Dispose();
        return names;
    }

    [Fact]
    public async Task Every_split_point_reads_the_same_documents()
    {
        using var h = StorageHarness.InMemory();
        var docs = new DocumentsStorage(h.Env, 2048);
        byte[] body = Encoding.UTF8.GetBytes(Body());
        for (int split = 1; split < body.Length; split++)
        {
            try
            {
                Assert.Equal(Names, await ReadSplitAsync(docs, body, split));
            }
            catch (Exception e)
            {
                throw new Xunit.Sdk.XunitException($"split at {split} of {body.Length} ({Encoding.UTF8.GetString(body.AsSpan(Math.Max(0, split - 10), Math.Min(10, split)))}|): {e}");
            }
        }
    }
}
