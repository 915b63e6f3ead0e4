using RavenLite.Server.Attachments;
using RavenLite.Server.Databases;
using RavenLite.Server.Documents;
using RavenLite.Server.TransactionMerger;

namespace RavenLite.Server.Operations;

/// <summary>
/// Fills an empty database with <see cref="SampleData"/> for the types asked (RavenDB's <c>CreateSampleDataOperation</c>
/// <c>operateOnTypes</c>): <c>Documents</c> (the default), <c>Attachments</c> (a <c>bio.txt</c> per employee),
/// <c>RevisionDocuments</c> (revisions on for Orders, so each order has its first revision) and <c>Indexes</c> (three static
/// indexes over the sample: orders' totals per company, a product search, employees by name). The documents, attachments
/// and revisions go in one transaction, checked against an empty database inside it.
/// </summary>
public static class SampleDataSetup
{
    /// <summary>The types this can create.</summary>
    public static readonly string[] Types = ["Documents", "Attachments", "RevisionDocuments", "Indexes"];

    /// <summary>The sample's indexes (RavenDB index definitions).</summary>
    public static readonly string[] Indexes =
    [
        """{"Name":"Orders/Totals","Maps":["from o in docs.Orders from l in o.Lines select new { o.Company, Total = l.Quantity * l.PricePerUnit, Count = 1 }"],"Reduce":"from r in results group r by r.Company into g select new { Company = g.Key, Total = g.Sum(x => x.Total), Count = g.Sum(x => x.Count) }"}""",
        """{"Name":"Products/Search","Maps":["from p in docs.Products select new { p.Name, p.Category, p.PricePerUnit }"],"Fields":{"Name":{"Indexing":"Search"}}}""",
        """{"Name":"Employees/ByFirstAndLastName","Maps":["from e in docs.Employees select new { e.FirstName, e.LastName }"]}""",
    ];

    /// <summary>The types named by <c>operateOnTypes</c> (comma-separated; empty: Documents); 400 for one this cannot create.</summary>
    public static HashSet<string> Parse(string? operateOnTypes)
    {
        var types = (operateOnTypes ?? "Documents").Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries).ToHashSet(StringComparer.OrdinalIgnoreCase);
        if (types.Count == 0)
            types.Add("Documents");
        foreach (string t in types)
            if (!Types.Contains(t, StringComparer.OrdinalIgnoreCase))
                throw new BadRequestException($"Sample data of type '{t}' is not one this server creates ({string.Join(", ", Types)}).");
        return types;
    }

    /// <summary>Creates the sample (400 when the database has documents).</summary>
    public static async Task CreateAsync(Database db, DatabaseRegistry registry, HashSet<string> types, CancellationToken cancellation)
    {
        ArgumentNullException.ThrowIfNull(db);
        ArgumentNullException.ThrowIfNull(types);
        var docs = SampleData.Generate().ToList();
        var bios = new List<(string Id, StagedContent Content)>();
        if (types.Contains("Attachments"))
            foreach (var (id, json) in docs.Where(d => d.Id.StartsWith("employees/", StringComparison.Ordinal)))
            {
                using var parsed = JsonDocument.Parse(json);
                var e = parsed.RootElement;
                string bio = $"{e.GetProperty("FirstName").GetString()} {e.GetProperty("LastName").GetString()}, {e.GetProperty("Title").GetString()}.";
                using var body = new MemoryStream(Encoding.UTF8.GetBytes(bio));
                bios.Add((id, await AttachmentUpload.StageAsync(body, db.Merger, 1 << 20, cancellation).ConfigureAwait(false)));
            }
        bool revisions = types.Contains("RevisionDocuments");
        using (var tx = db.Environment.ReadTransaction())
            if (DocumentsStorage.CountDocuments(tx) > 0)
                throw new BadRequestException("You cannot create sample data in a database that already contains documents.");
        if (revisions)
        {
            // Revisions on for Orders before they are written: each order's put makes its first revision.
            using var configuration = JsonDocument.Parse("""{"Collections":{"Orders":{"Disabled":false,"MinimumRevisionsToKeep":null}}}""");
            await RecordChanges.Prepare(RecordChanges.Revisions, configuration.RootElement, db)(db, registry, 0).ConfigureAwait(false);
        }
        var command = new DelegateCommand<int>(ctx =>
        {
            // Checked again inside the write transaction: no write can slip in between the check and the insert.
            if (DocumentsStorage.CountDocuments(ctx.Transaction) > 0)
                throw new BadRequestException("You cannot create sample data in a database that already contains documents.");
            if (types.Contains("Documents") || bios.Count > 0 || revisions)
                foreach (var (id, json) in docs)
                    ctx.Put(id, json, null);
            foreach (var (id, content) in bios)
                AttachmentOperations.Put(ctx, id, "bio.txt", "text/plain", content, null);
            return docs.Count;
        }, docs.Sum(d => (long)d.Json.Length));
        await db.Merger.EnqueueAsync(command).ConfigureAwait(false);
        if (types.Contains("Indexes"))
        {
            using var body = JsonDocument.Parse("{\"Indexes\":[" + string.Join(",", Indexes) + "]}");
            await RecordChanges.Prepare(RecordChanges.PutIndexes, body.RootElement, db)(db, registry, 0).ConfigureAwait(false);
        }
    }
}
