using System.Diagnostics;
using System.Globalization;
using System.Text.Json;
using Lucene.Net.Analysis.Core;
using Lucene.Net.Analysis.Standard;
using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Util;
using LuceneDirectory = Lucene.Net.Store.FSDirectory;

namespace RavenLite.Bench;

/// <summary>
/// The `indexing` suite's floor rows: what Lucene.Net's IndexWriter alone takes to index the same 1M
/// orders' simple-map fields (id, Company, Employee, Freight, City as lower-cased keywords) and full-text
/// field (street and city, standard analyzer), from values extracted beforehand (not timed), on every
/// core, with the server's writer settings. No storage, JSON, mapping or entry doc value: the server's
/// build cannot be faster than this, so it shows how much of a build is the library.
/// </summary>
internal static class LuceneFloor
{
    public static IEnumerable<BenchResult> Run(OrderDocuments docs, string workDir)
    {
        var simple = new string[docs.Count][];
        var address = new string[docs.Count];
        for (int i = 0; i < docs.Count; i++)
        {
            using var json = JsonDocument.Parse(docs.Document(i));
            var o = json.RootElement;
            var shipTo = o.GetProperty("ShipTo");
            simple[i] =
            [
                OrderDocuments.Id(i).ToLowerInvariant(),
                o.GetProperty("Company").GetString()!.ToLowerInvariant(),
                o.GetProperty("Employee").GetString()!.ToLowerInvariant(),
                o.GetProperty("Freight").GetDouble().ToString(CultureInfo.InvariantCulture),
                shipTo.GetProperty("City").GetString()!.ToLowerInvariant(),
            ];
            address[i] = shipTo.GetProperty("Line1").GetString() + " " + shipTo.GetProperty("City").GetString();
        }
        string[] names = ["id()", "Company", "Employee", "Freight", "City"];
        yield return Build(docs.Count, Path.Combine(workDir, "lucene-floor-simple"), "index-simple-map", new KeywordAnalyzer(), i =>
        {
            var d = new Document();
            for (int f = 0; f < names.Length; f++)
                d.Add(new StringField(names[f], simple[i][f], Field.Store.NO));
            return d;
        });
        yield return Build(docs.Count, Path.Combine(workDir, "lucene-floor-search"), "index-full-text", new StandardAnalyzer(LuceneVersion.LUCENE_48), i =>
            new Document { new StringField("id()", simple[i][0], Field.Store.NO), new TextField("Address", address[i], Field.Store.NO) });
    }

    private static BenchResult Build(int count, string path, string workload, Lucene.Net.Analysis.Analyzer analyzer, Func<int, Document> document)
    {
        if (Directory.Exists(path))
            Directory.Delete(path, true);
        var config = new IndexWriterConfig(LuceneVersion.LUCENE_48, analyzer)
        {
            OpenMode = OpenMode.CREATE,
            RAMBufferSizeMB = 64,
            MergePolicy = new TieredMergePolicy { SegmentsPerTier = 4, MaxMergeAtOnce = 4 },
        };
        int threads = Environment.ProcessorCount;
        var sw = Stopwatch.StartNew();
        using (var writer = new IndexWriter(LuceneDirectory.Open(path), config))
        {
            var workers = Enumerable.Range(0, threads).Select(t => new Thread(() =>
            {
                for (int i = t; i < count; i += threads)
                    writer.AddDocument(document(i));
            })).ToList();
            workers.ForEach(w => w.Start());
            workers.ForEach(w => w.Join());
            writer.Commit();
        }
        sw.Stop();
        Console.WriteLine($"#   lucene.net floor: {workload} {count / sw.Elapsed.TotalSeconds:N0} docs/s on {threads} threads");
        Directory.Delete(path, true);
        return new BenchResult("indexing", workload, "lucene.net-floor", "-", count, sw.Elapsed.TotalSeconds, count / sw.Elapsed.TotalSeconds, null, null, null, null, null, null, null, null);
    }
}
