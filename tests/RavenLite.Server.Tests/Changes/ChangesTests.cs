using System.Net.WebSockets;
using static RavenLite.Server.Tests.Helpers.TestServer;

namespace RavenLite.Server.Tests.Changes;

/// <summary>
/// The changes WebSocket: commands confirmed, only subscribed changes sent (documents, collections, prefixes,
/// counters, indexes) after they are durable, unsubscribing, bad commands answered with an error notification, a
/// reader that stops reading closed as too slow without slowing the writes, and a closing database ending its
/// connections.
/// </summary>
public sealed class ChangesTests
{
    private sealed class Client : IAsyncDisposable
    {
        private readonly ClientWebSocket _socket = new();
        private readonly Queue<JsonElement> _received = new();
        private int _commandId;

        public WebSocketCloseStatus? CloseStatus => _socket.CloseStatus;

        public string? CloseDescription => _socket.CloseStatusDescription;

        public static async Task<Client> ConnectAsync(TestServer s, string db = "db")
        {
            var c = new Client();
            var uri = new UriBuilder(s.Http.BaseAddress!) { Scheme = "ws", Path = $"/databases/{db}/changes" }.Uri;
            await c._socket.ConnectAsync(uri, CancellationToken.None);
            return c;
        }

        public async Task CommandAsync(string command, string? param = null, string[]? parameters = null, bool expectConfirm = true)
        {
            int id = ++_commandId;
            var body = JsonSerializer.Serialize(new Dictionary<string, object?> { ["CommandId"] = id, ["Command"] = command, ["Param"] = param, ["Params"] = parameters });
            await _socket.SendAsync(Encoding.UTF8.GetBytes(body), WebSocketMessageType.Text, true, CancellationToken.None);
            if (!expectConfirm)
                return;
            var confirm = await NextAsync(m => m.TryGetProperty("Type", out var t) && t.GetString() == "Confirm");
            Assert.Equal(id, confirm.GetProperty("CommandId").GetInt32());
        }

        /// <summary>The next message matching <paramref name="match"/> (earlier non-matching ones are dropped); fails after 10 s.</summary>
        public async Task<JsonElement> NextAsync(Func<JsonElement, bool> match)
        {
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            while (true)
            {
                while (_received.TryDequeue(out var m))
                    if (match(m))
                        return m;
                await ReceiveFrameAsync(cts.Token);
            }
        }

        /// <summary>Reads one frame into the queue; false when the socket closed.</summary>
        public async Task<bool> ReceiveFrameAsync(CancellationToken token)
        {
            var buffer = new byte[64 * 1024];
            using var frame = new MemoryStream();
            WebSocketReceiveResult r;
            do
            {
                r = await _socket.ReceiveAsync(buffer, token);
                if (r.MessageType == WebSocketMessageType.Close)
                    return false;
                frame.Write(buffer, 0, r.Count);
            }
            while (!r.EndOfMessage);
            var root = JsonDocument.Parse(frame.ToArray()).RootElement.Clone();
            foreach (var m in root.ValueKind == JsonValueKind.Array ? root.EnumerateArray() : new[] { root }.AsEnumerable())
                _received.Enqueue(m);
            return true;
        }

        public async ValueTask DisposeAsync()
        {
            _socket.Abort();
            _socket.Dispose();
            await Task.CompletedTask;
        }
    }

    private static Func<JsonElement, bool> Doc(string id) => m => m.GetProperty("Type").GetString() == "DocumentChange" && m.GetProperty("Value").GetProperty("Id").GetString() == id;

    private static async Task Put(TestServer s, string id, string collection) =>
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync($"/databases/db/docs?id={id}", Json("{\"A\":1,\"@metadata\":{\"@collection\":\"" + collection + "\"}}"))).StatusCode);

    [Fact]
    public async Task Subscribed_changes_arrive_with_their_fields_and_unsubscribed_ones_do_not()
    {
        await using var s = await StartWithDatabaseAsync();
        await using var c = await Client.ConnectAsync(s);
        await c.CommandAsync("watch-collection", "Orders");
        await c.CommandAsync("watch-doc", "users/1");
        await c.CommandAsync("watch-prefix", "items/");
        await c.CommandAsync("watch-document-counters", "users/1");
        await c.CommandAsync("watch-indexes");

        await Put(s, "users/2", "Users"); // not subscribed
        await Put(s, "orders/1", "Orders");
        var order = await c.NextAsync(Doc("orders/1"));
        var v = order.GetProperty("Value");
        Assert.Equal("Put", v.GetProperty("Type").GetString());
        Assert.Equal("Orders", v.GetProperty("CollectionName").GetString());
        var stored = await ReadJson(await s.Http.GetAsync("/databases/db/docs?id=orders/1"));
        Assert.Equal(stored.GetProperty("Results")[0].GetProperty("@metadata").GetProperty("@change-vector").GetString(), v.GetProperty("ChangeVector").GetString());

        await Put(s, "users/1", "Users");
        await c.NextAsync(Doc("users/1"));
        await Put(s, "items/7", "Items");
        await c.NextAsync(Doc("items/7"));
        Assert.Equal(HttpStatusCode.NoContent, (await s.Http.DeleteAsync("/databases/db/docs?id=orders/1")).StatusCode);
        var deleted = await c.NextAsync(Doc("orders/1"));
        Assert.Equal("Delete", deleted.GetProperty("Value").GetProperty("Type").GetString());

        var r = await s.Http.PostAsync("/databases/db/counters", Json("""{"Documents":[{"DocumentId":"users/1","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":4}]}]}"""));
        Assert.Equal(HttpStatusCode.OK, r.StatusCode);
        var counter = (await c.NextAsync(m => m.GetProperty("Type").GetString() == "CounterChange")).GetProperty("Value");
        Assert.Equal(("Likes", 4L, "Put", "users/1", "Users"), (counter.GetProperty("Name").GetString(), counter.GetProperty("Value").GetInt64(),
            counter.GetProperty("Type").GetString(), counter.GetProperty("DocumentId").GetString(), counter.GetProperty("CollectionName").GetString()));

        Assert.Equal(HttpStatusCode.Created, (await s.Http.PutAsync("/databases/db/indexes", Json("""{"Indexes":[{"Name":"Orders/All","Maps":["from o in docs.Orders select new { o.A }"]}]}"""))).StatusCode);
        await c.NextAsync(m => m.GetProperty("Type").GetString() == "IndexChange" && m.GetProperty("Value").GetProperty("Type").GetString() == "IndexAdded"
            && m.GetProperty("Value").GetProperty("Name").GetString() == "Orders/All");

        // Unsubscribed from the collection: the next order is not sent; the sentinel behind it is.
        await c.CommandAsync("unwatch-collection", "Orders");
        await c.CommandAsync("unwatch-indexes");
        await Put(s, "orders/2", "Orders");
        await Put(s, "items/8", "Items");
        bool sawOrder = false;
        await c.NextAsync(m =>
        {
            sawOrder |= Doc("orders/2")(m);
            return Doc("items/8")(m);
        });
        Assert.False(sawOrder);

        // A bad command is answered with an error notification; the connection stays usable.
        await c.CommandAsync("watch-everything", expectConfirm: false);
        var error = await c.NextAsync(m => m.GetProperty("Type").GetString() == "Error");
        Assert.Contains("watch-everything", error.GetProperty("Exception").GetString());
        await c.CommandAsync("watch-doc", "users/9");
        await Put(s, "users/9", "Users");
        await c.NextAsync(Doc("users/9"));

        Assert.Equal(HttpStatusCode.BadRequest, (await s.Http.GetAsync("/databases/db/changes")).StatusCode);
    }

    /// <summary>
    /// One commit of 600 documents and a counter: a connection watching every document gets the 600 (and the counter's
    /// document change) in commit order and not the counter (the batch holds a kind it does not watch: filtered); one
    /// watching documents and counters gets them all (the shared pieces of 256); one watching a single document gets only it.
    /// </summary>
    [Fact]
    public async Task One_large_commit_reaches_every_kind_of_subscription_complete_and_in_order()
    {
        await using var s = await StartWithDatabaseAsync();
        await using var docs = await Client.ConnectAsync(s);
        await docs.CommandAsync("watch-docs");
        await using var everything = await Client.ConnectAsync(s);
        await everything.CommandAsync("watch-docs");
        await everything.CommandAsync("watch-counters");
        await using var one = await Client.ConnectAsync(s);
        await one.CommandAsync("watch-doc", "users/300");

        var commands = new JsonArray();
        for (int i = 0; i < 600; i++)
            commands.Add(new JsonObject { ["Id"] = $"users/{i}", ["Type"] = "PUT", ["Document"] = new JsonObject { ["N"] = i, ["@metadata"] = new JsonObject { ["@collection"] = "Users" } } });
        commands.Add(JsonNode.Parse("""{"Type":"Counters","Id":"users/599","Counters":{"DocumentId":"users/599","Operations":[{"Type":"Increment","CounterName":"Likes","Delta":1}]}}"""));
        Assert.Equal(HttpStatusCode.Created, (await s.Http.PostAsync("/databases/db/bulk_docs", Json(new JsonObject { ["Commands"] = commands }.ToJsonString()))).StatusCode);
        await Put(s, "sentinel/1", "Sentinels");

        static async Task<List<string>> Until(Client c, string last)
        {
            var seen = new List<string>();
            await c.NextAsync(m =>
            {
                string type = m.GetProperty("Type").GetString()!;
                string what = type == "DocumentChange" ? m.GetProperty("Value").GetProperty("Id").GetString()! : type + ":" + m.GetProperty("Value").GetProperty("Name").GetString();
                seen.Add(what);
                return what == last;
            });
            return seen;
        }
        // The counter changes users/599's metadata (@counters): a document change after the 600 puts.
        var users = Enumerable.Range(0, 600).Select(i => $"users/{i}").Append("users/599").ToList();
        Assert.Equal([.. users, "sentinel/1"], await Until(docs, "sentinel/1"));
        var all = await Until(everything, "sentinel/1");
        Assert.Equal([.. users, "sentinel/1"], all.Where(x => !x.StartsWith("CounterChange:", StringComparison.Ordinal)));
        Assert.Equal(["CounterChange:Likes"], all.Where(x => x.StartsWith("CounterChange:", StringComparison.Ordinal)));
        Assert.Equal(["users/300"], await Until(one, "users/300"));
        await Put(s, "users/300", "Users");
        Assert.Equal(["users/300"], await Until(one, "users/300")); // nothing else came in between (the sentinel, other users)
    }

    [Fact]
    public async Task A_reader_that_stops_is_closed_as_too_slow_and_writes_do_not_wait_for_it()
    {
        await using var s = await StartWithDatabaseAsync();
        await using var slow = await Client.ConnectAsync(s);
        await slow.CommandAsync("watch-docs");
        // 150,000 changes (≈ 20 MB of notifications) while the slow client reads nothing: more than its queue and the
        // loopback socket buffers hold.
        var body = new StringBuilder("[");
        for (int i = 0; i < 150_000; i++)
            body.Append(i == 0 ? "" : ",").Append("{\"Id\":\"bulk/").Append(i).Append("\",\"Type\":\"PUT\",\"Document\":{\"N\":").Append(i).Append(",\"@metadata\":{\"@collection\":\"Bulk\"}}}");
        body.Append(']');
        var insert = s.Http.PostAsync("/databases/db/bulk_insert?id=9", new StringContent(body.ToString(), Encoding.UTF8, "application/json"));
        Assert.True(await Task.WhenAny(insert, Task.Delay(TimeSpan.FromSeconds(60))) == insert, "the bulk insert finished while the changes reader read nothing");
        Assert.Equal(HttpStatusCode.Created, (await insert).StatusCode);

        // Now it reads: what was queued, then the close frame saying why.
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        try
        {
            while (await slow.ReceiveFrameAsync(cts.Token))
            {
            }
        }
        catch (Exception e) when (e is WebSocketException or IOException)
        {
            // Cut off after the grace period (the close frame could not be sent to a reader that did not read): also a close.
        }
        if (slow.CloseStatus != null)
        {
            Assert.Equal(WebSocketCloseStatus.PolicyViolation, slow.CloseStatus);
            Assert.Contains("too slowly", slow.CloseDescription);
        }

        // A new connection works and subscribes again.
        await using var again = await Client.ConnectAsync(s);
        await again.CommandAsync("watch-doc", "users/1");
        await Put(s, "users/1", "Users");
        await again.NextAsync(Doc("users/1"));
    }

    [Fact]
    public async Task Deleting_the_database_ends_its_connections()
    {
        await using var s = await StartWithDatabaseAsync();
        await using var c = await Client.ConnectAsync(s);
        await c.CommandAsync("watch-docs");
        var delete = s.Http.SendAsync(new HttpRequestMessage(HttpMethod.Delete, "/admin/databases") { Content = Json("""{"DatabaseNames":["db"],"HardDelete":true}""") });
        Assert.True(await Task.WhenAny(delete, Task.Delay(TimeSpan.FromSeconds(20))) == delete, "the delete waited for the changes connection");
        Assert.Equal(HttpStatusCode.OK, (await delete).StatusCode);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        bool open;
        try
        {
            open = await c.ReceiveFrameAsync(cts.Token) && await c.ReceiveFrameAsync(cts.Token);
        }
        catch (WebSocketException)
        {
            open = false;
        }
        Assert.False(open);
        Assert.Equal(HttpStatusCode.ServiceUnavailable, (await s.Http.GetAsync("/databases/db/changes")).StatusCode);
    }
}
