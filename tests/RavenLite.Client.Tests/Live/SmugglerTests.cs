
namespace RavenLite.Client.Tests.Live;

public sealed class SmugglerTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task A_database_exported_to_a_file_imports_into_another()
    {
        var source = await fixture.Driver.GetDocumentStoreAsync();
        var target = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = source.OpenAsyncSession())
        {
            for (int i = 1; i <= 40; i++)
                await s.StoreAsync(new User { Name = "u" + i, Age = i }, "users/" + i);
            s.CountersFor("users/3").Increment("Logins", 4);
            await s.SaveChangesAsync();
        }
        string file = Path.Combine(Path.GetTempPath(), $"rl-export-{Guid.NewGuid():N}.ravendbdump");
        try
        {
            var exported = await source.Smuggler.ExportAsync(file);
            Assert.Equal(40, (long)exported["Documents"]!["ReadCount"]!);
            Assert.True(new FileInfo(file).Length > 0);
            var imported = await target.Smuggler.ImportAsync(file);
            Assert.Equal(40, (long)imported["Documents"]!["ReadCount"]!);
            using var t = target.OpenAsyncSession();
            Assert.Equal(17, (await t.LoadAsync<User>("users/17"))!.Age);
            Assert.Equal(4, await t.CountersFor("users/3").GetAsync("Logins"));
            await Assert.ThrowsAsync<Exceptions.BadRequestException>(async () =>
            {
                await File.WriteAllTextAsync(file, """{"Docs":[{"broken""");
                await target.Smuggler.ImportAsync(file);
            });
        }
        finally
        {
            File.Delete(file);
        }
    }
}
