using Lucene.Net.Analysis.Core;
using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Store;
using Lucene.Net.Util;
using RavenLite.Server.Indexing;

namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// IndexMergeScheduler: an index's merges on one long-lived thread. Many near-real-time reopens (a segment each) are
/// merged down; a writer closes and rolls back with merges queued, without hanging; the merges run on its thread, not
/// on the caller's.
/// </summary>
public sealed class IndexMergeSchedulerTests
{
    private static IndexWriter Writer(Lucene.Net.Store.Directory directory, List<Exception> failures) =>
        new(directory, new IndexWriterConfig(LuceneVersion.LUCENE_48, new KeywordAnalyzer())
        {
            MergePolicy = new TieredMergePolicy { SegmentsPerTier = 4, MaxMergeAtOnce = 4 },
            MergeScheduler = new IndexMergeScheduler("test", e => { lock (failures) failures.Add(e); }),
        });

    [Fact]
    public async Task Segments_of_many_reopens_are_merged_on_the_scheduler_thread()
    {
        var failures = new List<Exception>();
        using var directory = new RAMDirectory();
        var writer = Writer(directory, failures);
        var reader = DirectoryReader.Open(writer, applyAllDeletes: true);
        for (int i = 0; i < 300; i++)
        {
            var doc = new Document { new StringField("id", "d" + (i % 50), Field.Store.YES), new StringField("n", i.ToString(System.Globalization.CultureInfo.InvariantCulture), Field.Store.NO) };
            writer.UpdateDocument(new Term("id", "d" + (i % 50)), doc);
            var next = DirectoryReader.OpenIfChanged(reader, writer, applyAllDeletes: true);
            if (next != null)
            {
                reader.Dispose();
                reader = next;
            }
        }
        Assert.Equal(50, reader.NumDocs);
        await Task.Run(writer.WaitForMerges).WaitAsync(TimeSpan.FromSeconds(30)); // a TimeoutException: the merges never ran
        using (var merged = DirectoryReader.Open(writer, applyAllDeletes: true))
        {
            Assert.Equal(50, merged.NumDocs);
            Assert.True(merged.Leaves.Count <= 12, $"{merged.Leaves.Count} segments after 300 reopens");
        }
        reader.Dispose();
        await Task.Run(writer.Dispose).WaitAsync(TimeSpan.FromSeconds(30));
        Assert.Empty(failures);
        // What was written survives the close.
        using var reopened = DirectoryReader.Open(directory);
        Assert.Equal(50, reopened.NumDocs);
    }

    [Fact]
    public async Task A_writer_rolls_back_and_closes_with_merges_queued()
    {
        var failures = new List<Exception>();
        using var directory = new RAMDirectory();
        for (int round = 0; round < 5; round++)
        {
            var writer = Writer(directory, failures);
            for (int i = 0; i < 40; i++)
            {
                writer.AddDocument(new Document { new StringField("id", $"r{round}-{i}", Field.Store.YES) });
                writer.Flush(triggerMerge: true, applyAllDeletes: true); // a segment each, merges asked for
            }
            var closing = Task.Run(() =>
            {
                if (round % 2 == 0)
                    writer.Rollback();
                else
                    writer.Dispose();
            });
            await closing.WaitAsync(TimeSpan.FromSeconds(30)); // a TimeoutException: the writer did not close
        }
        Assert.Empty(failures);
        using var reader = DirectoryReader.Open(directory);
        Assert.Equal(2 * 40, reader.NumDocs); // rounds 1 and 3 closed (committed); 0, 2, 4 rolled back
    }
}
