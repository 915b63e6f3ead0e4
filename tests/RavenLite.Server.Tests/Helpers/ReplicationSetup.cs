namespace RavenLite.Server.Tests.Helpers;

/// <summary>Setting up replication the way RavenDB's clients do: a Raven connection string, then an external replication task.</summary>
public static class ReplicationSetup
{
    /// <summary>Replicates <paramref name="database"/> on <paramref name="source"/> to <paramref name="destinationDatabase"/> at <paramref name="destinationUrl"/>; returns the task id.</summary>
    public static async Task<long> ExternalAsync(HttpClient source, string database, Uri destinationUrl, string destinationDatabase, string? delay = null)
    {
        string name = $"to-{destinationDatabase}-{destinationUrl.Port}";
        var cs = new JsonObject { ["Name"] = name, ["Database"] = destinationDatabase, ["TopologyDiscoveryUrls"] = new JsonArray(destinationUrl.ToString().TrimEnd('/')), ["Type"] = "Raven" };
        var r = await source.PutAsync($"/databases/{database}/admin/connection-strings", TestServer.Json(cs.ToJsonString()));
        Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
        var watcher = new JsonObject { ["Watcher"] = new JsonObject { ["Name"] = name, ["ConnectionStringName"] = name, ["DelayReplicationFor"] = delay ?? "00:00:00" } };
        r = await source.PostAsync($"/databases/{database}/admin/tasks/external-replication", TestServer.Json(watcher.ToJsonString()));
        var json = await TestServer.ReadJson(r);
        Assert.True(r.IsSuccessStatusCode, json.ToString());
        return json.GetProperty("TaskId").GetInt64();
    }

    /// <summary>The document's JSON on <paramref name="http"/>'s database, or null when it does not exist.</summary>
    public static async Task<JsonElement?> GetAsync(HttpClient http, string database, string id)
    {
        var r = await http.GetAsync($"/databases/{database}/docs?id={Uri.EscapeDataString(id)}");
        if (r.StatusCode == HttpStatusCode.NotFound)
            return null;
        var json = await TestServer.ReadJson(r);
        Assert.True(r.IsSuccessStatusCode, json.ToString());
        return json.GetProperty("Results")[0];
    }

    /// <summary>Puts a document (collection from <c>@metadata</c>) and returns its change vector.</summary>
    public static async Task<string> PutAsync(HttpClient http, string database, string id, string json)
    {
        var r = await http.PutAsync($"/databases/{database}/docs?id={Uri.EscapeDataString(id)}", TestServer.Json(json));
        var answer = await TestServer.ReadJson(r);
        Assert.True(r.StatusCode == HttpStatusCode.Created, answer.ToString());
        return answer.GetProperty("ChangeVector").GetString()!;
    }
}
