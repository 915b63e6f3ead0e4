using System.Text.Json.Nodes;

namespace RavenLite.Server.Configuration;

/// <summary>
/// The server-wide client configuration (<c>PUT /admin/configuration/client</c>): what RavenDB's clients apply when
/// their database has none of its own. Kept in <c>{DataDir}/server.json</c> (written atomically). Thread-safe.
/// </summary>
public sealed class ServerClientConfiguration
{
    private readonly string _path;
    private readonly object _lock = new();

    /// <summary>Loads the stored configuration, if any.</summary>
    public ServerClientConfiguration(ServerOptions options)
    {
        _path = Path.Combine(options.DataDir, "server.json");
        if (File.Exists(_path) && JsonNode.Parse(File.ReadAllBytes(_path)) is JsonObject json)
        {
            Client = json[nameof(Client)]?.DeepClone() as JsonObject;
            Etag = (long?)json["ClientEtag"] ?? 0;
        }
    }

    /// <summary>The configuration (null: none).</summary>
    public JsonObject? Client { get; private set; }

    /// <summary>Changes whenever <see cref="Client"/> does.</summary>
    public long Etag { get; private set; }

    /// <summary>Stores a new configuration.</summary>
    public void Set(JsonObject client)
    {
        lock (_lock)
        {
            long etag = Math.Max(DateTime.UtcNow.Ticks, Etag + 1);
            var json = new JsonObject { [nameof(Client)] = client.DeepClone(), ["ClientEtag"] = etag };
            Directory.CreateDirectory(Path.GetDirectoryName(_path)!);
            string tmp = _path + ".tmp";
            using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write))
            {
                f.Write(JsonSerializer.SerializeToUtf8Bytes(json));
                f.Flush(flushToDisk: true);
            }
            File.Move(tmp, _path, overwrite: true);
            Client = client;
            Etag = etag;
        }
    }

    /// <summary>
    /// What a database's clients are given: its own configuration unless absent or disabled, else the server's unless
    /// absent or disabled, else a disabled one as it is (<c>Disabled: true</c>: RavenDB answers it, its clients then apply
    /// nothing); and the etag that changes when either changes. <paramref name="own"/> and <paramref name="ownEtag"/> are
    /// the database's (from its record).
    /// </summary>
    public (JsonObject? Configuration, long Etag) EffectiveFor(JsonObject? own, long ownEtag)
    {
        var server = Client;
        static bool Enabled(JsonObject? c) => c != null && !((bool?)c["Disabled"] ?? false);
        JsonObject? effective = Enabled(own) ? own : Enabled(server) ? server : own ?? server;
        return (effective, Math.Max(ownEtag, Etag));
    }
}
