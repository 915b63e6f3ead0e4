using RavenLite.Client.Expiration;

namespace RavenLite.Client.Tests.Extensions;

public sealed class ExpirationTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Expired_documents_are_deleted_and_refreshed_ones_rewritten_once_configured()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        string past = DateTime.UtcNow.AddMinutes(-1).ToString("o", System.Globalization.CultureInfo.InvariantCulture);
        string? refreshedCv;
        using (var s = store.OpenAsyncSession())
        {
            var old = new User { Name = "old" };
            await s.StoreAsync(old, "users/old");
            s.Advanced.GetMetadataFor(old)["@expires"] = past;
            var keep = new User { Name = "keep" };
            await s.StoreAsync(keep, "users/keep");
            s.Advanced.GetMetadataFor(keep)["@expires"] = DateTime.UtcNow.AddHours(1).ToString("o", System.Globalization.CultureInfo.InvariantCulture);
            var fresh = new User { Name = "fresh" };
            await s.StoreAsync(fresh, "users/fresh");
            s.Advanced.GetMetadataFor(fresh)["@refresh"] = past;
            await s.SaveChangesAsync();
            refreshedCv = s.Advanced.GetChangeVectorFor(fresh);
        }
        using (var s = store.OpenAsyncSession())
            Assert.NotNull(await s.LoadAsync<User>("users/old")); // nothing happens until configured
        await store.Maintenance.SendAsync(new ConfigureExpirationOperation(disabled: false, deleteFrequencyInSec: 1));
        await store.Maintenance.SendAsync(new ConfigureRefreshOperation(disabled: false, refreshFrequencyInSec: 1));
        for (int i = 0; i < 100; i++)
        {
            using var s = store.OpenAsyncSession();
            var fresh = await s.LoadAsync<User>("users/fresh");
            if (await s.LoadAsync<User>("users/old") == null && s.Advanced.GetChangeVectorFor(fresh!) != refreshedCv)
                break;
            await Task.Delay(100);
        }
        using (var s = store.OpenAsyncSession())
        {
            Assert.Null(await s.LoadAsync<User>("users/old"));
            Assert.NotNull(await s.LoadAsync<User>("users/keep"));
            var fresh = await s.LoadAsync<User>("users/fresh");
            Assert.NotEqual(refreshedCv, s.Advanced.GetChangeVectorFor(fresh!));
            Assert.False(s.Advanced.GetMetadataFor(fresh!).ContainsKey("@refresh"));
        }
    }
}
