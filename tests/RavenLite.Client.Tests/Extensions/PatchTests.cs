using RavenLite.Client.Exceptions;
using RavenLite.Client.Patching;

namespace RavenLite.Client.Tests.Extensions;

public sealed class PatchTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Patches_run_in_the_session_batch_and_as_operations()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "Ann", Age = 30 }, "users/1");
            await s.SaveChangesAsync();
            s.Advanced.Increment("users/1", "Age", 5);
            s.Advanced.Patch("users/1", new PatchRequest("this.Name = args.name; this.Tags.push('patched');", new Dictionary<string, object?> { ["name"] = "Ann B" }));
            s.Advanced.Patch("users/2", new PatchRequest("this.Age += 1;"), patchIfMissing: new PatchRequest("this.Name = 'created'; this.Age = 1; this['@metadata'] = { '@collection': 'Users' };"));
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var ann = await s.LoadAsync<User>("users/1");
            Assert.Equal(35, ann!.Age);
            Assert.Equal("Ann B", ann.Name);
            Assert.Equal(["patched"], ann.Tags);
            Assert.Equal("created", (await s.LoadAsync<User>("users/2"))!.Name);
        }
        Assert.Equal(PatchStatus.Patched, await store.Maintenance.SendAsync(new PatchOperation("users/1", new PatchRequest("this.Age = 40;"))));
        Assert.Equal(PatchStatus.NotModified, await store.Maintenance.SendAsync(new PatchOperation("users/1", new PatchRequest("this.Age = 40;"))));
        Assert.Equal(PatchStatus.DocumentDoesNotExist, await store.Maintenance.SendAsync(new PatchOperation("users/none", new PatchRequest("this.Age = 1;"))));
        var e = await Assert.ThrowsAsync<BadRequestException>(() => store.Maintenance.SendAsync(new PatchOperation("users/1", new PatchRequest("this.Age = ;"))));
        Assert.Contains("line", e.Message, StringComparison.OrdinalIgnoreCase);
        using (var s = store.OpenAsyncSession())
            Assert.Equal(40, (await s.LoadAsync<User>("users/1"))!.Age);
    }
}
