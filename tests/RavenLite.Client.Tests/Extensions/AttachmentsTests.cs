using System.Security.Cryptography;
using RavenLite.Client.Attachments;
using RavenLite.Client.Exceptions;

namespace RavenLite.Client.Tests.Extensions;

public sealed class AttachmentsTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    private static async Task<byte[]> ReadAll(AttachmentResult r)
    {
        using var copy = new MemoryStream();
        await r.Stream.CopyToAsync(copy);
        return copy.ToArray();
    }

    [Fact]
    public async Task Session_attachments_are_saved_with_the_batch_and_tracked_in_metadata()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var big = new byte[5 * 1024 * 1024 + 3];
        new Random(3).NextBytes(big);
        using (var s = store.OpenAsyncSession())
        {
            var ann = new User { Name = "Ann" };
            await s.StoreAsync(ann, "users/1");
            s.Advanced.Attachments.Store(ann, "note.txt", new MemoryStream("hello"u8.ToArray()), "text/plain");
            s.Advanced.Attachments.Store("users/1", "big.bin", new MemoryStream(big));
            await s.SaveChangesAsync();
            Assert.Equal(["big.bin", "note.txt"], s.Advanced.Attachments.GetNames(ann).Select(a => a.Name).Order().ToArray());
            ann.Age = 30; // the tracked change vector followed the attachments: a concurrency-checked save passes
            s.Advanced.UseOptimisticConcurrency = true;
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var ann = await s.LoadAsync<User>("users/1");
            var names = s.Advanced.Attachments.GetNames(ann!);
            Assert.Equal(5, names.Single(n => n.Name == "note.txt").Size);
            Assert.True(await s.Advanced.Attachments.ExistsAsync("users/1", "note.txt"));
            Assert.False(await s.Advanced.Attachments.ExistsAsync("users/1", "none"));
            using (var note = await s.Advanced.Attachments.GetAsync("users/1", "note.txt"))
            {
                Assert.Equal("text/plain", note!.Details.ContentType);
                Assert.Equal("hello"u8.ToArray(), await ReadAll(note));
            }
            using (var b = await s.Advanced.Attachments.GetAsync("users/1", "big.bin"))
            {
                Assert.Equal(Convert.ToBase64String(SHA256.HashData(big)), b!.Details.Hash);
                Assert.Equal(big, await ReadAll(b));
            }
            Assert.Null(await s.Advanced.Attachments.GetAsync("users/1", "none"));
            await s.StoreAsync(new User { Name = "Bob" }, "users/2");
            s.Advanced.Attachments.Copy("users/1", "note.txt", "users/2", "copy.txt");
            s.Advanced.Attachments.Rename("users/1", "big.bin", "large.bin");
            s.Advanced.Attachments.Move("users/1", "note.txt", "users/2", "moved.txt");
            await s.SaveChangesAsync();
            Assert.Equal(["large.bin"], s.Advanced.Attachments.GetNames(ann!).Select(a => a.Name).ToArray());
        }
        using (var s = store.OpenAsyncSession())
        {
            var bob = await s.LoadAsync<User>("users/2");
            Assert.Equal(["copy.txt", "moved.txt"], s.Advanced.Attachments.GetNames(bob!).Select(a => a.Name).Order().ToArray());
            s.Advanced.Attachments.Delete("users/2", "copy.txt");
            await s.SaveChangesAsync();
            Assert.Equal(["moved.txt"], s.Advanced.Attachments.GetNames(bob!).Select(a => a.Name).ToArray());
        }
    }

    [Fact]
    public async Task Attachment_operations_stream_and_refuse_a_missing_document()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "x" }, "users/x");
            await s.SaveChangesAsync();
        }
        var data = new byte[300_000];
        new Random(5).NextBytes(data);
        var details = await store.Maintenance.SendAsync(new PutAttachmentOperation("users/x", "data", new MemoryStream(data), "application/x-data"));
        Assert.Equal(data.Length, details.Size);
        using (var r = await store.Maintenance.SendAsync(new GetAttachmentOperation("users/x", "data")))
            Assert.Equal(data, await ReadAll(r!));
        await store.Maintenance.SendAsync(new DeleteAttachmentOperation("users/x", "data"));
        Assert.Null(await store.Maintenance.SendAsync(new GetAttachmentOperation("users/x", "data")));
        await Assert.ThrowsAsync<DocumentDoesNotExistException>(() =>
            store.Maintenance.SendAsync(new PutAttachmentOperation("users/missing", "data", new MemoryStream(data))));
    }
}
