using System.Globalization;
using CsCheck;

namespace RavenLite.Server.Tests.Documents;

/// <summary>
/// docs/reliability.md "Property tests": CsCheck generates sequences of document puts, deletes and patches,
/// attachment puts and deletes, counter increments and deletes — over HTTP on a real server — and checks after every
/// step that each document reads back as a model says (body, <c>@attachments</c>, <c>@counters</c>, attachment
/// contents, counter values), that every write's etag is above every etag before it, and that a document's change
/// vector changes with each of its writes. A failing sequence is shrunk to a shortest one; CsCheck prints its seed.
/// </summary>
public class DocumentPropertyTests(ITestOutputHelper output)
{
    private enum Kind { Put, Delete, Patch, PutAttachment, DeleteAttachment, Increment, DeleteCounter }

    private sealed record Op(Kind Kind, int Doc, int Name, int Value)
    {
        public override string ToString() => $"{Kind}(d{Doc}, n{Name}, {Value})";
    }

    private static readonly Gen<Op> Ops = Gen.Select(
        Gen.Frequency((25, Gen.Const(Kind.Put)), (8, Gen.Const(Kind.Delete)), (15, Gen.Const(Kind.Patch)), (15, Gen.Const(Kind.PutAttachment)),
            (8, Gen.Const(Kind.DeleteAttachment)), (20, Gen.Const(Kind.Increment)), (8, Gen.Const(Kind.DeleteCounter))),
        Gen.Int[0, 3], Gen.Int[0, 2], Gen.Int[-5, 2000], (k, d, n, v) => new Op(k, d, n, v));

    [Fact]
    public async Task Every_sequence_of_document_operations_matches_the_model()
    {
        await using var server = await TestServer.StartWithDatabaseAsync();
        int sequence = 0;
        Ops.Array[1, 25].Sample(ops => new Run(server.Http, $"s{Interlocked.Increment(ref sequence)}").ExecuteAsync(ops).GetAwaiter().GetResult(),
            iter: 120, threads: 1, writeLine: output.WriteLine, print: ops => string.Join(", ", ops));
    }

    private sealed class Doc
    {
        public int Value;
        public readonly SortedDictionary<string, byte[]> Attachments = new(StringComparer.Ordinal);
        public readonly SortedDictionary<string, long> Counters = new(StringComparer.Ordinal);
        public string? ChangeVector; // as last read
        public bool Written; // since then
    }

    /// <summary>One sequence, on its own document ids.</summary>
    private sealed class Run(HttpClient http, string prefix)
    {
        private readonly Dictionary<int, Doc> _docs = [];
        private long _lastEtag;

        private string Id(int doc) => $"{prefix}/{doc}";

        private string Url(string path, int doc) => $"/databases/db/{path}?id={Uri.EscapeDataString(Id(doc))}";

        public async Task ExecuteAsync(Op[] ops)
        {
            foreach (var op in ops)
            {
                await ApplyAsync(op);
                foreach (int doc in Enumerable.Range(0, 4))
                    await VerifyAsync(doc);
            }
        }

        private async Task ApplyAsync(Op op)
        {
            bool exists = _docs.TryGetValue(op.Doc, out var doc);
            string name = $"n{op.Name}";
            switch (op.Kind)
            {
                case Kind.Put:
                {
                    // A put keeps the document's attachments and counters (the server owns those metadata entries).
                    var r = await http.PutAsync(Url("docs", op.Doc), TestServer.Json($"{{\"Value\":{op.Value},\"@metadata\":{{\"@collection\":\"Things\"}}}}"));
                    Assert.Equal(HttpStatusCode.Created, r.StatusCode);
                    doc ??= _docs[op.Doc] = new Doc();
                    doc.Value = op.Value;
                    Written(doc, (await TestServer.ReadJson(r)).GetProperty("ChangeVector").GetString());
                    break;
                }
                case Kind.Delete:
                    Assert.Equal(HttpStatusCode.NoContent, (await http.DeleteAsync(Url("docs", op.Doc))).StatusCode);
                    _docs.Remove(op.Doc);
                    break;
                case Kind.Patch:
                {
                    var r = await http.PatchAsync(Url("docs", op.Doc), TestServer.Json($"{{\"Patch\":{{\"Script\":\"this.Value = this.Value + args.d\",\"Values\":{{\"d\":{op.Value}}}}}}}"));
                    if (!exists)
                    {
                        Assert.Equal(HttpStatusCode.NotFound, r.StatusCode);
                        break;
                    }
                    Assert.Equal(HttpStatusCode.OK, r.StatusCode);
                    var body = await TestServer.ReadJson(r);
                    if (op.Value == 0)
                        break; // nothing changed: RavenDB answers NotModified and writes nothing
                    doc!.Value += op.Value;
                    Written(doc, body.GetProperty("ChangeVector").GetString());
                    break;
                }
                case Kind.PutAttachment:
                {
                    byte[] content = Encoding.UTF8.GetBytes(new string((char)('a' + op.Name), Math.Abs(op.Value) % 300) + op.Value);
                    var r = await http.PutAsync(Url("attachments", op.Doc) + "&name=" + name, new ByteArrayContent(content));
                    if (!exists)
                    {
                        Assert.True((int)r.StatusCode is >= 400 and < 500, $"attachment on a missing document: {(int)r.StatusCode}");
                        break;
                    }
                    Assert.Equal(HttpStatusCode.Created, r.StatusCode);
                    doc!.Attachments[name] = content;
                    Written(doc, null);
                    break;
                }
                case Kind.DeleteAttachment:
                {
                    var r = await http.DeleteAsync(Url("attachments", op.Doc) + "&name=" + name);
                    Assert.Equal(HttpStatusCode.NoContent, r.StatusCode);
                    if (exists && doc!.Attachments.Remove(name))
                        Written(doc, null);
                    break;
                }
                case Kind.Increment or Kind.DeleteCounter:
                {
                    string type = op.Kind == Kind.Increment ? "Increment" : "Delete";
                    var r = await http.PostAsync("/databases/db/counters", TestServer.Json(
                        $"{{\"Documents\":[{{\"DocumentId\":\"{Id(op.Doc)}\",\"Operations\":[{{\"Type\":\"{type}\",\"CounterName\":\"{name}\",\"Delta\":{op.Value}}}]}}]}}"));
                    if (!exists)
                    {
                        Assert.True((int)r.StatusCode is >= 400 and < 500, $"counter on a missing document: {(int)r.StatusCode}");
                        break;
                    }
                    Assert.Equal(HttpStatusCode.OK, r.StatusCode);
                    if (op.Kind == Kind.Increment)
                    {
                        bool added = !doc!.Counters.ContainsKey(name);
                        doc.Counters[name] = doc.Counters.GetValueOrDefault(name) + op.Value;
                        if (added)
                            Written(doc, null);
                    }
                    else if (doc!.Counters.Remove(name))
                    {
                        Written(doc, null);
                    }
                    break;
                }
            }
        }

        /// <summary>
        /// A write to <paramref name="doc"/>: the answer's change vector (when the answer has one) is the document's,
        /// its etag above every etag seen before; the next read must show a change vector other than the last one.
        /// </summary>
        private void Written(Doc doc, string? changeVector)
        {
            if (changeVector != null)
            {
                long etag = Etag(changeVector);
                Assert.True(etag > _lastEtag, $"etag {etag} after {_lastEtag}");
                _lastEtag = etag;
            }
            doc.Written = true;
        }

        private static long Etag(string changeVector)
        {
            // "A:17-dbid" (one entry per node; this server is one node)
            string entry = changeVector.Split(',')[0];
            int colon = entry.IndexOf(':', StringComparison.Ordinal), dash = entry.IndexOf('-', colon);
            return long.Parse(entry[(colon + 1)..dash], CultureInfo.InvariantCulture);
        }

        private async Task VerifyAsync(int id)
        {
            var r = await http.GetAsync(Url("docs", id));
            if (!_docs.TryGetValue(id, out var doc))
            {
                Assert.Equal(HttpStatusCode.NotFound, r.StatusCode);
                return;
            }
            Assert.Equal(HttpStatusCode.OK, r.StatusCode);
            var read = (await TestServer.ReadJson(r)).GetProperty("Results")[0];
            Assert.Equal(doc.Value, read.GetProperty("Value").GetInt32());
            var metadata = read.GetProperty("@metadata");
            string[] attachments = metadata.TryGetProperty("@attachments", out var a) ? [.. a.EnumerateArray().Select(x => x.GetProperty("Name").GetString()!).Order(StringComparer.Ordinal)] : [];
            Assert.Equal(doc.Attachments.Keys, attachments);
            string[] counters = metadata.TryGetProperty("@counters", out var c) ? [.. c.EnumerateArray().Select(x => x.GetString()!).Order(StringComparer.Ordinal)] : [];
            Assert.Equal(doc.Counters.Keys, counters);
            string changeVector = metadata.GetProperty("@change-vector").GetString()!;
            if (doc.Written && doc.ChangeVector != null)
                Assert.True(Etag(changeVector) > Etag(doc.ChangeVector), $"written, yet change vector {changeVector} after {doc.ChangeVector}");
            else if (!doc.Written)
                Assert.Equal(doc.ChangeVector, changeVector);
            doc.Written = false;
            doc.ChangeVector = changeVector;
            foreach (var (name, content) in doc.Attachments)
                Assert.Equal(content, await http.GetByteArrayAsync(Url("attachments", id) + "&name=" + name));
            foreach (var (name, value) in doc.Counters)
            {
                var counter = (await TestServer.ReadJson(await http.GetAsync($"/databases/db/counters?docId={Uri.EscapeDataString(Id(id))}&counter={name}"))).GetProperty("Counters")[0];
                Assert.Equal(value, counter.GetProperty("TotalValue").GetInt64());
            }
        }
    }
}
