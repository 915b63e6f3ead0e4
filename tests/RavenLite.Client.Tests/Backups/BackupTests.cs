using RavenLite.Client.Backups;
using RavenLite.Client.Linq;
using RavenLite.Client.Operations;

namespace RavenLite.Client.Tests.Backups;

public sealed class BackupTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task A_periodic_snapshot_task_backs_up_fully_then_incrementally_and_restores_into_a_new_database()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        string folder = Path.Combine(Path.GetTempPath(), $"rl-client-backup-{Guid.NewGuid():N}");
        try
        {
            using (var s = store.OpenAsyncSession())
            {
                for (int i = 1; i <= 30; i++)
                    await s.StoreAsync(new User { Name = "u" + i, Age = i }, "users/" + i);
                await s.SaveChangesAsync();
            }
            long taskId = await store.Maintenance.SendAsync(new UpdatePeriodicBackupOperation(new PeriodicBackupConfiguration
            {
                Name = "hourly",
                FolderPath = folder,
                FullBackupFrequency = "0 3 * * *",
                IncrementalBackupFrequency = "0 * * * *",
            }));
            Assert.Null(await store.Maintenance.SendAsync(new GetPeriodicBackupStatusOperation(taskId)));

            await OperationCompletion.WaitForCompletionAsync(store, await store.Maintenance.SendAsync(new StartBackupOperation(true, taskId)));
            using (var s = store.OpenAsyncSession())
            {
                await s.StoreAsync(new User { Name = "late", Age = 99 }, "users/31");
                s.Delete("users/1");
                await s.SaveChangesAsync();
            }
            await OperationCompletion.WaitForCompletionAsync(store, await store.Maintenance.SendAsync(new StartBackupOperation(false, taskId)));
            var status = await store.Maintenance.SendAsync(new GetPeriodicBackupStatusOperation(taskId));
            Assert.NotNull(status);
            Assert.False(status.IsFull);
            Assert.NotNull(status.LastFullBackup);
            Assert.NotNull(status.LastIncrementalBackup);
            Assert.EndsWith(".ravendb-incremental-backup", status.FileName, StringComparison.Ordinal);

            string restored = store.Database + "-restored";
            long restore = await store.Maintenance.Server.SendAsync(new RestoreBackupOperation(new RestoreBackupConfiguration { DatabaseName = restored, BackupLocation = status.BackupDirectory! }));
            await OperationCompletion.WaitForServerOperationAsync(store, restore);
            using (var s = store.OpenAsyncSession(restored))
            {
                Assert.Null(await s.LoadAsync<User>("users/1"));
                Assert.Equal(99, (await s.LoadAsync<User>("users/31"))!.Age);
                Assert.Equal(30, (await s.Query<User>().ToListAsync()).Count);
            }
            await store.Maintenance.SendAsync(new DeleteBackupTaskOperation(taskId));
            await Assert.ThrowsAnyAsync<Exceptions.RavenException>(() => store.Maintenance.SendAsync(new GetPeriodicBackupStatusOperation(taskId)));
            await store.Maintenance.Server.SendAsync(new DeleteDatabaseOperation(restored));
        }
        finally
        {
            if (Directory.Exists(folder))
                Directory.Delete(folder, recursive: true);
        }
    }

    [Fact]
    public async Task A_one_time_backup_to_a_folder_that_cannot_be_written_is_refused()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        string file = Path.GetTempFileName();
        try
        {
            var e = await Assert.ThrowsAsync<Exceptions.BadRequestException>(() =>
                store.Maintenance.SendAsync(new BackupOperation(new BackupConfiguration { FolderPath = Path.Combine(file, "sub") })));
            Assert.Contains("not writable", e.Message, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(file);
        }
    }
}
