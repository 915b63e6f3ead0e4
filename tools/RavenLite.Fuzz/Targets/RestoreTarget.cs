using System.IO.Compression;
using System.Net;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// Backup folders damaged at random, restored (docs/reliability.md "Fuzzing"). Three backups of the seeded fuzz
/// database are taken once: a snapshot chain (a full snapshot, writes, an incremental one) and a dump. Each input picks
/// one (restored whole, or the chain up to its full snapshot with <c>LastFileNameToRestore</c>), how to damage it and
/// the restore's flags; the damaged copy is restored into a new database with <c>POST /admin/restore/database</c>.
/// The first byte: bits 0–1 the backup, bit 2 whether the edits (<see cref="ByteEdits"/>) hit the files' raw bytes or
/// the entries inside one file (a snapshot's zip entries, a dump's JSON, then packed again, so the damage passes the
/// container's own checks), bit 3 <c>SkipIndexes</c>, bit 4 <c>DisableOngoingTasks</c>; in entry mode the second byte
/// picks the file. What may happen: the request is refused with a 4xx, or the restore operation fails with a 4xx
/// status and leaves no database, or it completes and the database holds the backup's documents exactly — except
/// after edits inside a dump, whose JSON then says what it holds. Anything else is a finding.
/// </summary>
public sealed class RestoreTarget : IFuzzTarget
{
    private static readonly TimeSpan OperationLimit = TimeSpan.FromSeconds(30);

    private readonly FuzzServer _server = new();
    private readonly string _root = Path.Combine(Path.GetTempPath(), $"ravenlite-fuzz-restore-{Guid.NewGuid():N}");
    private readonly Backup[] _backups;
    private int _restores;

    /// <summary>A backup folder's files (by name), the file to restore up to, and the documents the restore must yield.</summary>
    private sealed record Backup(Dictionary<string, byte[]> Files, string? Last, string Documents, bool IsDump = false);

    public RestoreTarget()
    {
        SeedData.Put(_server);
        string snapshots = Path.Combine(_root, "snapshots");
        string config = JsonSerializer.Serialize(new
        {
            Name = "snapshots",
            BackupType = "Snapshot",
            LocalSettings = new { FolderPath = snapshots },
            FullBackupFrequency = "0 3 * * *",
            IncrementalBackupFrequency = "0 * * * *",
        });
        long task = JsonDocument.Parse(FuzzServer.Expect(_server.SendToDatabase(HttpMethod.Post, "/admin/periodic-backup", FuzzServer.Json(config)), HttpStatusCode.OK).Body)
            .RootElement.GetProperty("TaskId").GetInt64();
        var full = RunBackup(HttpMethod.Post, $"/admin/backup/database?isFullBackup=true&taskId={task}", null);
        string atFull = Documents(FuzzServer.Database);

        // Writes between the two snapshots: a new document, a changed one, a deleted one, a counter.
        const string writes = """
            {"Commands":[{"Type":"PUT","Id":"orders/21","Document":{"Total":1,"@metadata":{"@collection":"Orders"}}},
              {"Type":"PUT","Id":"companies/3","Document":{"Name":"Renamed","@metadata":{"@collection":"Companies"}}},
              {"Type":"DELETE","Id":"orders/5"},
              {"Type":"Counters","Id":"orders/2","Counters":{"DocumentId":"orders/2","Operations":[{"Type":"Increment","CounterName":"views","Delta":2}]}}]}
            """;
        FuzzServer.Expect(_server.SendToDatabase(HttpMethod.Post, "/bulk_docs", FuzzServer.Json(writes)), HttpStatusCode.Created);
        RunBackup(HttpMethod.Post, $"/admin/backup/database?isFullBackup=false&taskId={task}", null);
        string atIncremental = Documents(FuzzServer.Database);
        // The periodic task is not wanted any more: its schedule would otherwise add backups while the fuzzer runs.
        FuzzServer.Expect(_server.SendToDatabase(HttpMethod.Delete, $"/admin/tasks?id={task}&type=Backup"), HttpStatusCode.OK);

        var dump = RunBackup(HttpMethod.Post, "/admin/backup", JsonSerializer.Serialize(new { BackupType = "Backup", LocalSettings = new { FolderPath = Path.Combine(_root, "dumps") } }));
        var chain = Files(full);
        _backups =
        [
            new Backup(chain, null, atIncremental),
            new Backup(chain, full.GetProperty("LocalBackup").GetProperty("FileName").GetString(), atFull),
            new Backup(Files(dump), null, atIncremental, IsDump: true),
        ];
    }

    public void Run(ReadOnlySpan<byte> input)
    {
        int mode = input.Length > 0 ? input[0] : 0;
        var backup = _backups[(mode & 3) % _backups.Length];
        bool insideFiles = (mode & 4) != 0;
        var files = new Dictionary<string, byte[]>(backup.Files, StringComparer.Ordinal);
        var edits = input.Length > 0 ? input[1..] : [];
        if (insideFiles && edits.Length > 0)
        {
            string name = files.Keys.Order(StringComparer.Ordinal).ElementAt(edits[0] % files.Count);
            files[name] = EditInside(name, files[name], edits[1..]);
        }
        else
        {
            ByteEdits.Apply(files, edits);
        }

        string database = $"r{++_restores}";
        string folder = Path.Combine(_root, database);
        Directory.CreateDirectory(folder);
        try
        {
            foreach (var (name, bytes) in files)
                File.WriteAllBytes(Path.Combine(folder, name), bytes);
            string request = JsonSerializer.Serialize(new
            {
                DatabaseName = database,
                BackupLocation = folder,
                LastFileNameToRestore = backup.Last,
                SkipIndexes = (mode & 8) != 0,
                DisableOngoingTasks = (mode & 16) != 0,
                Type = "Local",
            });
            var started = _server.Send(HttpMethod.Post, "/admin/restore/database", FuzzServer.Json(request));
            if (!started.IsSuccess)
                return; // refused up front with a 4xx (checked by Send)
            long operation = JsonDocument.Parse(started.Body).RootElement.GetProperty("OperationId").GetInt64();
            var state = WaitFor($"/operations/state?id={operation}");
            if (state.GetProperty("Status").GetString() == "Faulted")
            {
                var result = state.GetProperty("Result");
                int status = result.TryGetProperty("StatusCode", out var sc) && sc.ValueKind == JsonValueKind.Number ? sc.GetInt32() : 500;
                if (status >= 500)
                    throw new FuzzFindingException($"the restore failed with {status}: {result}");
                if (_server.Send(HttpMethod.Get, $"/admin/databases?name={database}").Status != HttpStatusCode.NotFound)
                    throw new FuzzFindingException($"the failed restore left database {database} behind: {result}");
                return;
            }
            string restored = Documents(database);
            if (!(insideFiles && backup.IsDump) && restored != backup.Documents)
                throw new FuzzFindingException($"the damaged backup restored documents it does not hold:\n{restored[..Math.Min(600, restored.Length)]}");
            // The restored indexes (their files may have been edited) answer a query or refuse it, never fail the server.
            _server.Send(HttpMethod.Post, $"/databases/{database}/queries", FuzzServer.Json("""{"Query":"from index 'Companies/Search' where search(Name, 'company')"}"""));
            FuzzServer.Expect(_server.Send(HttpMethod.Delete, $"/admin/databases?name={database}&hardDelete=true"), HttpStatusCode.OK);
        }
        finally
        {
            Directory.Delete(folder, recursive: true);
        }
    }

    /// <summary>Edits the entries of a snapshot (zip) or the JSON of a dump (gzip), then packs them again.</summary>
    private static byte[] EditInside(string name, byte[] file, ReadOnlySpan<byte> edits)
    {
        var output = new MemoryStream();
        if (IsZip(file))
        {
            using var zip = new ZipArchive(new MemoryStream(file), ZipArchiveMode.Read);
            var order = zip.Entries.Select(e => e.FullName).ToList();
            var entries = zip.Entries.ToDictionary(e => e.FullName, Read, StringComparer.Ordinal);
            ByteEdits.Apply(entries, edits);
            using var packed = new ZipArchive(output, ZipArchiveMode.Create, leaveOpen: true);
            foreach (string entry in order)
            {
                using var stream = packed.CreateEntry(entry).Open();
                stream.Write(entries[entry]);
            }
        }
        else
        {
            using var gzip = new GZipStream(new MemoryStream(file), CompressionMode.Decompress);
            var json = new MemoryStream();
            gzip.CopyTo(json);
            var entries = new Dictionary<string, byte[]>(StringComparer.Ordinal) { [name] = json.ToArray() };
            ByteEdits.Apply(entries, edits);
            using var packed = new GZipStream(output, CompressionLevel.Fastest, leaveOpen: true);
            packed.Write(entries[name]);
        }
        return output.ToArray();
    }

    private static byte[] Read(ZipArchiveEntry entry)
    {
        using var stream = entry.Open();
        var bytes = new MemoryStream();
        stream.CopyTo(bytes);
        return bytes.ToArray();
    }

    private static bool IsZip(byte[] file) => file.Length >= 4 && file[0] == 'P' && file[1] == 'K';

    /// <summary>Runs a backup operation of the fuzz database to completion; its result.</summary>
    private JsonElement RunBackup(HttpMethod method, string path, string? body)
    {
        var started = FuzzServer.Expect(_server.SendToDatabase(method, path, body == null ? null : FuzzServer.Json(body)), HttpStatusCode.OK);
        long operation = JsonDocument.Parse(started.Body).RootElement.GetProperty("OperationId").GetInt64();
        var state = WaitFor($"/databases/{FuzzServer.Database}/operations/state?id={operation}");
        return state.GetProperty("Status").GetString() == "Completed"
            ? state.GetProperty("Result").Clone()
            : throw new FuzzFindingException($"the seed backup did not complete: {state}");
    }

    /// <summary>The files of the folder a backup wrote.</summary>
    private static Dictionary<string, byte[]> Files(JsonElement result)
    {
        string folder = result.GetProperty("LocalBackup").GetProperty("BackupDirectory").GetString()!;
        return Directory.GetFiles(folder).ToDictionary(f => Path.GetFileName(f), File.ReadAllBytes, StringComparer.Ordinal);
    }

    /// <summary>Polls an operation until it ends; one running past the limit is a hang.</summary>
    private JsonElement WaitFor(string path)
    {
        var deadline = DateTime.UtcNow + OperationLimit;
        while (true)
        {
            var state = JsonDocument.Parse(FuzzServer.Expect(_server.Send(HttpMethod.Get, path), HttpStatusCode.OK).Body).RootElement;
            if (state.GetProperty("Status").GetString() != "InProgress")
                return state;
            if (DateTime.UtcNow > deadline)
                throw new FuzzFindingException($"the operation {path} was still running after {OperationLimit.TotalSeconds} s");
            Thread.Sleep(10);
        }
    }

    /// <summary>A database's documents, in id order, each without its metadata, as text to compare.</summary>
    private string Documents(string database)
    {
        var answer = FuzzServer.Expect(_server.Send(HttpMethod.Get, $"/databases/{database}/docs?start=0&pageSize=1024"), HttpStatusCode.OK);
        var documents = new SortedDictionary<string, string>(StringComparer.OrdinalIgnoreCase);
        foreach (var node in JsonNode.Parse(answer.Body)!["Results"]!.AsArray())
        {
            var document = node!.AsObject();
            string id = document["@metadata"]!["@id"]!.GetValue<string>();
            document.Remove("@metadata");
            documents[id] = document.ToJsonString();
        }
        return string.Join('\n', documents.Select(d => d.Key + " " + d.Value));
    }

    public void Dispose()
    {
        _server.Dispose();
        try
        {
            Directory.Delete(_root, recursive: true);
        }
        catch (IOException)
        {
            // left to the temp cleaner
        }
    }
}
