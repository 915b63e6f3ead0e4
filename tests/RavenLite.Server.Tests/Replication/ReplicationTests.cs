namespace RavenLite.Server.Tests.Replication;

/// <summary>
/// Replication between databases (docs/replication.md): documents and deletes flow over the TCP port; change vectors
/// carry both instances' entries; concurrent writes resolve the same way on both sides; tasks report progress.
/// </summary>
public sealed class ReplicationTests
{
    [Fact]
    public async Task Documents_and_deletes_replicate_to_another_database_on_the_same_server()
    {
        await using var server = await TestServer.StartWithDatabaseAsync("src");
        Assert.Equal(HttpStatusCode.Created, (await server.Http.PutAsync("/admin/databases?name=dst", TestServer.Json("{\"DatabaseName\":\"dst\"}"))).StatusCode);
        for (int i = 0; i < 50; i++)
            await ReplicationSetup.PutAsync(server.Http, "src", $"users/{i}", "{\"Name\":\"user " + i + "\",\"@metadata\":{\"@collection\":\"Users\"}}");
        long taskId = await ReplicationSetup.ExternalAsync(server.Http, "src", server.Url, "dst");
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(server.Http, "dst", "users/49") != null, "users/49 on dst");
        var copy = (await ReplicationSetup.GetAsync(server.Http, "dst", "users/7"))!.Value;
        var original = (await ReplicationSetup.GetAsync(server.Http, "src", "users/7"))!.Value;
        Assert.Equal("user 7", copy.GetProperty("Name").GetString());
        Assert.Equal(original.GetProperty("@metadata").GetProperty("@change-vector").GetString(), copy.GetProperty("@metadata").GetProperty("@change-vector").GetString());
        Assert.Equal(original.GetProperty("@metadata").GetProperty("@last-modified").GetString(), copy.GetProperty("@metadata").GetProperty("@last-modified").GetString());

        // Updates and deletes follow.
        await ReplicationSetup.PutAsync(server.Http, "src", "users/7", """{"Name":"changed","@metadata":{"@collection":"Users"}}""");
        Assert.Equal(HttpStatusCode.NoContent, (await server.Http.DeleteAsync("/databases/src/docs?id=users/8")).StatusCode);
        await Eventually.HoldsAsync(async () => await ReplicationSetup.GetAsync(server.Http, "dst", "users/8") == null
            && (await ReplicationSetup.GetAsync(server.Http, "dst", "users/7"))?.GetProperty("Name").GetString() == "changed", "the update and the delete on dst");

        // A local write on the destination keeps the source's entry and adds its own.
        string local = await ReplicationSetup.PutAsync(server.Http, "dst", "users/7", """{"Name":"edited on dst","@metadata":{"@collection":"Users"}}""");
        Assert.Equal(2, local.Split(',').Length);

        // The task reports its progress.
        var tasks = await TestServer.ReadJson(await server.Http.GetAsync("/databases/src/tasks"));
        var task = tasks.GetProperty("OngoingTasks").EnumerateArray().Single();
        Assert.Equal(taskId, task.GetProperty("TaskId").GetInt64());
        Assert.Equal("Active", task.GetProperty("TaskConnectionStatus").GetString());
        var stats = await TestServer.ReadJson(await server.Http.GetAsync("/databases/src/stats"));
        await Eventually.HoldsAsync(async () =>
            (await TestServer.ReadJson(await server.Http.GetAsync($"/databases/src/tasks?key={taskId}&type=Replication"))).GetProperty("EtagLag").GetInt64() == 0,
            "no lag once idle");
        Assert.Equal(stats.GetProperty("LastDocEtag").GetInt64(),
            (await TestServer.ReadJson(await server.Http.GetAsync($"/databases/src/tasks?key={taskId}&type=Replication"))).GetProperty("LastAcknowledgedEtag").GetInt64());
    }
}
