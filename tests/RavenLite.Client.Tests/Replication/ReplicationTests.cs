using RavenLite.Client.Exceptions;
using RavenLite.Client.Replication;

namespace RavenLite.Client.Tests.Replication;

/// <summary>Replication through the .NET client: a connection string and task, write assurance, conflicts kept and resolved.</summary>
public sealed class ReplicationTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task A_session_waiting_for_replication_finds_its_writes_on_the_destination_and_a_kept_conflict_is_resolved_by_a_store()
    {
        var source = await fixture.Driver.GetDocumentStoreAsync();
        var copy = await fixture.Driver.GetDocumentStoreAsync();
        await copy.Maintenance.SendAsync(new ModifyConflictSolverOperation(resolveToLatest: false));
        await source.Maintenance.SendAsync(new PutConnectionStringOperation(new RavenConnectionString("to-copy", copy.Database!, [fixture.Driver.Url.ToString().TrimEnd('/')])));
        long taskId = await source.Maintenance.SendAsync(new UpdateExternalReplicationOperation(new ExternalReplication { Name = "copy", ConnectionStringName = "to-copy" }));

        using (var s = source.OpenAsyncSession())
        {
            s.Advanced.WaitForReplicationAfterSaveChanges(TimeSpan.FromSeconds(30), replicas: 1);
            await s.StoreAsync(new User { Name = "Ada", Age = 36 }, "users/1");
            await s.SaveChangesAsync();
        }
        using (var s = copy.OpenAsyncSession())
            Assert.Equal("Ada", (await s.LoadAsync<User>("users/1"))!.Name);
        var info = await source.Maintenance.SendAsync(new GetReplicationTaskInfoOperation(taskId));
        Assert.Equal("Active", info.ConnectionStatus);

        // Concurrent versions, no resolver: the copy keeps them in conflict until a store resolves it.
        using (var s = copy.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "copy's" }, "users/2");
            await s.SaveChangesAsync();
        }
        using (var s = source.OpenAsyncSession())
        {
            s.Advanced.WaitForReplicationAfterSaveChanges(TimeSpan.FromSeconds(30));
            await s.StoreAsync(new User { Name = "source's" }, "users/2");
            await s.SaveChangesAsync();
        }
        using (var s = copy.OpenAsyncSession())
            await Assert.ThrowsAsync<DocumentConflictException>(() => s.LoadAsync<User>("users/2"));
        var versions = await copy.Maintenance.SendAsync(new GetConflictsOperation("users/2"));
        Assert.Equal(2, versions.Count);
        using (var s = copy.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "resolved" }, "users/2");
            await s.SaveChangesAsync();
        }
        using (var s = copy.OpenAsyncSession())
            Assert.Equal("resolved", (await s.LoadAsync<User>("users/2"))!.Name);

        // No destination: write assurance times out, the write stays.
        await source.Maintenance.SendAsync(new DeleteReplicationTaskOperation(taskId));
        using (var s = source.OpenAsyncSession())
        {
            s.Advanced.WaitForReplicationAfterSaveChanges(TimeSpan.FromMilliseconds(200));
            await s.StoreAsync(new User { Name = "unreplicated" }, "users/3");
            await Assert.ThrowsAsync<RavenTimeoutException>(() => s.SaveChangesAsync());
        }
        using (var s = source.OpenAsyncSession())
            Assert.NotNull(await s.LoadAsync<User>("users/3"));
    }
}
