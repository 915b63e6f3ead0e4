using RavenLite.Client.BulkInsert;
using RavenLite.Client.Exceptions;
using RavenLite.Client.Operations;
using Xunit.Abstractions;

namespace RavenLite.Client.Tests.BulkInsert;

public sealed class BulkInsertTests(DriverFixture fixture, ITestOutputHelper output) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Hundred_thousand_documents_arrive_counted_and_spot_checked()
    {
        const int count = 100_000;
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var progress = new List<BulkInsertProgress>();
        var ids = new string[count];
        await using (var bulk = store.BulkInsert())
        {
            bulk.Progress += (_, p) => progress.Add(p);
            for (int i = 0; i < count; i++)
                ids[i] = await bulk.StoreAsync(new User { Name = "bulk" + i, Age = i % 90, Tags = ["t" + (i % 7)] });
        }
        Assert.Equal(count, ids.Distinct().Count());
        var stats = await store.Maintenance.SendAsync(new GetStatisticsOperation());
        Assert.Equal(count + 1, stats.CountOfDocuments); // + HiLo document
        Assert.True(progress.Count > 10, "progress is reported as buffers go out");
        Assert.Equal(count, progress[^1].DocumentsSent);
        Assert.True(progress[^1].BytesSent > count * 50L);
        Assert.True(progress.Zip(progress.Skip(1)).All(p => p.Second.DocumentsSent >= p.First.DocumentsSent));
        output.WriteLine($"{count:N0} documents, {progress[^1].BytesSent:N0} bytes, {progress[^1].DocumentsPerSecond:N0} docs/s");

        var rnd = new Random(17);
        using var s = store.OpenAsyncSession();
        var sample = Enumerable.Range(0, 20).Select(_ => rnd.Next(count)).Distinct().ToList();
        var loaded = await s.LoadAsync<User>(sample.Select(i => ids[i]));
        foreach (int i in sample)
        {
            var u = loaded[ids[i]]!;
            Assert.Equal("bulk" + i, u.Name);
            Assert.Equal(i % 90, u.Age);
            Assert.Equal(["t" + (i % 7)], u.Tags);
            Assert.Equal("Users", (string?)s.Advanced.GetMetadataFor(u)["@collection"]);
        }
    }

    [Fact]
    public async Task Gzip_stream_with_explicit_ids_and_metadata()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await using (var bulk = store.BulkInsert(options: new BulkInsertOptions { Compress = true, BufferBytes = 4096 }))
        {
            for (int i = 0; i < 2_000; i++)
                await bulk.StoreAsync(new Company { Name = "gz" + i }, $"companies/gz-{i}", new Dictionary<string, object?> { ["Source"] = "import" });
        }
        using var s = store.OpenAsyncSession();
        var c = await s.LoadAsync<Company>("companies/gz-1999");
        Assert.Equal("gz1999", c!.Name);
        Assert.Equal("import", (string?)s.Advanced.GetMetadataFor(c)["Source"]);
        Assert.Equal(2_000, (await store.Maintenance.SendAsync(new GetStatisticsOperation())).CountOfDocuments);
    }

    [Fact]
    public async Task A_server_side_failure_is_a_clear_exception_and_committed_batches_stay()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var bulk = store.BulkInsert();
        var e = await Assert.ThrowsAsync<BulkInsertAbortedException>(async () =>
        {
            for (int i = 0; i < 50_000; i++)
                await bulk.StoreAsync(new Company { Name = "ok" }, $"companies/{i}");
            await bulk.StoreAsync(new Company { Name = "bad" }, "companies/" + new string('x', 600)); // over the server's id limit
            for (int i = 0; i < 10; i++)
                await bulk.StoreAsync(new Company { Name = "after" }, $"companies/after-{i}");
            await bulk.DisposeAsync();
        });
        output.WriteLine(e.Message);
        Assert.Contains("512", e.Message, StringComparison.Ordinal); // the server's reason
        long docs = (await store.Maintenance.SendAsync(new GetStatisticsOperation())).CountOfDocuments;
        Assert.InRange(docs, 0, 50_000); // whole committed batches only
        using var s = store.OpenAsyncSession();
        Assert.Null(await s.LoadAsync<Company>("companies/after-0"));
    }

    [Fact]
    public async Task Skip_overwrite_if_unchanged_leaves_identical_documents_as_they_were()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await using (var bulk = store.BulkInsert())
            for (int i = 0; i < 200; i++)
                await bulk.StoreAsync(new User { Name = "u" + i, Age = i }, $"users/{i}");
        var before = new Dictionary<string, string?>();
        using (var s = store.OpenAsyncSession())
            foreach (var (id, u) in await s.LoadAsync<User>(Enumerable.Range(0, 200).Select(i => $"users/{i}")))
                before[id] = s.Advanced.GetChangeVectorFor(u!);
        await using (var bulk = store.BulkInsert(options: new BulkInsertOptions { SkipOverwriteIfUnchanged = true }))
            for (int i = 0; i < 200; i++)
                await bulk.StoreAsync(new User { Name = "u" + i, Age = i % 20 == 0 ? -i : i }, $"users/{i}"); // every 20th changes
        using (var s = store.OpenAsyncSession())
        {
            foreach (var (id, u) in await s.LoadAsync<User>(Enumerable.Range(0, 200).Select(i => $"users/{i}")))
            {
                int i = int.Parse(id["users/".Length..], System.Globalization.CultureInfo.InvariantCulture);
                if (i % 20 == 0 && i > 0)
                {
                    Assert.NotEqual(before[id], s.Advanced.GetChangeVectorFor(u!));
                    Assert.Equal(-i, u!.Age);
                }
                else
                {
                    Assert.Equal(before[id], s.Advanced.GetChangeVectorFor(u!)); // not rewritten
                }
            }
        }
        // Without the option the same documents are all written again.
        await using (var bulk = store.BulkInsert())
            await bulk.StoreAsync(new User { Name = "u1", Age = 1 }, "users/1");
        using (var s = store.OpenAsyncSession())
            Assert.NotEqual(before["users/1"], s.Advanced.GetChangeVectorFor((await s.LoadAsync<User>("users/1"))!));
    }

    [Fact]
    public async Task An_empty_bulk_insert_sends_nothing()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        await using (store.BulkInsert())
        {
        }
        Assert.Equal(0, (await store.Maintenance.SendAsync(new GetStatisticsOperation())).CountOfDocuments);
    }
}
