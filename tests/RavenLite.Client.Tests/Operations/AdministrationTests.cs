using RavenLite.Client.Operations;

namespace RavenLite.Client.Tests.Operations;

public sealed class AdministrationTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Index_administration_client_configuration_settings_statistics_and_compaction()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            for (int i = 1; i <= 50; i++)
                await s.StoreAsync(new User { Name = "u" + i, Age = i }, "users/" + i);
            await s.SaveChangesAsync();
        }
        await store.Maintenance.SendAsync(new PutIndexesOperation(new IndexDefinition { Name = "Users/ByAge", Maps = ["from u in docs.Users select new { u.Age }"] }));

        await store.Maintenance.SendAsync(new SetIndexesLockOperation(IndexLockMode.LockedError, "Users/ByAge"));
        await Assert.ThrowsAsync<Exceptions.BadRequestException>(() =>
            store.Maintenance.SendAsync(new PutIndexesOperation(new IndexDefinition { Name = "Users/ByAge", Maps = ["from u in docs.Users select new { u.Name }"] })));
        await store.Maintenance.SendAsync(new SetIndexesLockOperation(IndexLockMode.Unlock, "Users/ByAge"));
        await store.Maintenance.SendAsync(new SetIndexesPriorityOperation(IndexPriority.High, "Users/ByAge"));
        await store.Maintenance.SendAsync(new SetIndexEnabledOperation("Users/ByAge", enabled: false));
        Assert.Equal("Disabled", (await store.Maintenance.SendAsync(new GetIndexingStatusOperation())).Indexes["Users/ByAge"]);
        await store.Maintenance.SendAsync(new SetIndexEnabledOperation("Users/ByAge", enabled: true));
        await store.Maintenance.SendAsync(new SetIndexingRunningOperation(running: false));
        Assert.Equal("Paused", (await store.Maintenance.SendAsync(new GetIndexingStatusOperation())).Status);
        await store.Maintenance.SendAsync(new SetIndexingRunningOperation(running: true));
        Assert.Equal("Running", (await store.Maintenance.SendAsync(new GetIndexingStatusOperation())).Indexes["Users/ByAge"]);

        // The client configuration reaches this client through its next request.
        await store.Maintenance.SendAsync(new PutClientConfigurationOperation(new ClientConfiguration { MaxNumberOfRequestsPerSession = 2 }));
        using (var s = store.OpenAsyncSession())
            await s.LoadAsync<User>("users/1"); // answered with Refresh-Client-Configuration; the client fetches it
        Assert.Equal(2, store.Conventions.MaxNumberOfRequestsPerSession);
        using (var s = store.OpenAsyncSession())
        {
            await s.LoadAsync<User>("users/1");
            await s.LoadAsync<User>("users/2");
            await Assert.ThrowsAnyAsync<InvalidOperationException>(() => s.LoadAsync<User>("users/3"));
        }
        await store.Maintenance.SendAsync(new PutClientConfigurationOperation(new ClientConfiguration { Disabled = true }));
        using (var s = store.OpenAsyncSession())
            await s.LoadAsync<User>("users/1");
        Assert.Equal(30, store.Conventions.MaxNumberOfRequestsPerSession);

        await store.Maintenance.SendAsync(new PutDatabaseSettingsOperation(new Dictionary<string, string> { ["MergerMaxOperations"] = "256" }));
        IReadOnlyDictionary<string, string>? settings = null;
        for (int i = 0; i < 100 && settings == null; i++)
        {
            try
            {
                settings = await store.Maintenance.SendAsync(new GetDatabaseSettingsOperation());
            }
            catch (Exceptions.RavenException)
            {
                await Task.Delay(50); // the database reopens to apply them
            }
        }
        Assert.Equal("256", settings!["MergerMaxOperations"]);
        var stats = await store.Maintenance.SendAsync(new GetDetailedStatisticsOperation());
        Assert.Equal(50, (long)stats["CountOfDocuments"]!);
        Assert.NotNull(stats["CountOfIdentities"]);

        long compaction = await store.Maintenance.Server.SendAsync(new CompactDatabaseOperation(store.Database!, documents: true, "Users/ByAge"));
        var result = await OperationCompletion.WaitForServerOperationAsync(store, compaction);
        Assert.NotNull(result["Result"]!["StorageBytesAfter"]);
        using (var s = store.OpenAsyncSession())
            Assert.Equal(37, (await s.LoadAsync<User>("users/37"))!.Age);
    }
}
