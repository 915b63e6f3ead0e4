using RavenLite.Client.Linq;
using RavenLite.Embedded;
using RavenLite.TestKit;

namespace RavenLite.Client.Tests.Embedded;

/// <summary>docs/packages.md "Embedded server": the server in this process, stopped and started again on its data directory.</summary>
public sealed class EmbeddedServerTests
{
    [Fact]
    public async Task A_restarted_embedded_server_holds_what_the_first_acknowledged_and_refuses_a_second_start()
    {
        using var data = new TempDirectory("ravenlite-embedded");
        await using (var server = new EmbeddedServer())
        {
            await server.StartServerAsync(new EmbeddedServerOptions { DataDirectory = data.Path, ServeStudio = false });
            Assert.Equal("127.0.0.1", server.ServerUri.Host);
            Assert.NotEqual(0, server.ServerUri.Port); // the free port it was given
            var started = await Assert.ThrowsAsync<InvalidOperationException>(() => server.StartServerAsync(new EmbeddedServerOptions { DataDirectory = data.Path }));
            Assert.Contains("running already", started.Message, StringComparison.Ordinal);

            var store = await server.GetDocumentStoreAsync("Shop"); // created: the directory was empty
            using var session = store.OpenAsyncSession();
            for (int i = 0; i < 50; i++)
                await session.StoreAsync(new Item { Name = "item " + i }, $"items/{i}");
            await session.SaveChangesAsync();
        }

        await using (var again = new EmbeddedServer())
        {
            await again.StartServerAsync(new EmbeddedServerOptions { DataDirectory = data.Path, ServeStudio = false });
            var store = await again.GetDocumentStoreAsync("Shop"); // exists: opened, not created
            using var session = store.OpenAsyncSession();
            Assert.Equal("item 17", (await session.LoadAsync<Item>("items/17"))!.Name);
            Assert.Equal(50, await session.Query<Item>().Customize(x => x.WaitForNonStaleResults()).CountAsync());
        }
        Assert.Throws<InvalidOperationException>(() => new EmbeddedServer().ServerUri);
    }

    private sealed class Item
    {
        public string Name { get; set; } = "";
    }
}
