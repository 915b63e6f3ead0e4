// Child process for the SIGKILL crash test (docs/reliability.md R1 at the storage layer).
// Usage: RavenLite.Storage.CrashWorker <directory> [--async] [--encrypted]
// With --async it pipelines like the server's merger: transaction i+1 is built while i's journal
// write is in flight (WriteTransaction.CommitAsync), and i is acknowledged when its task completes.
// Opens the environment on real files (Sync durability, a busy background flusher), resumes
// after the last committed transaction, and commits forever. After each Commit returns it prints
// "ACK <n>" and flushes stdout, so the parent knows exactly what was acknowledged before it
// kills this process with SIGKILL at a random moment.
using System.Buffers.Binary;
using RavenLite.Storage;
using RavenLite.Storage.CrashWorker;

// With --encrypted the environment is encrypted with CrashModel's test key.
if (args.Length < 1 || args.Skip(1).Any(a => a is not ("--async" or "--encrypted")))
{
    Console.Error.WriteLine("usage: RavenLite.Storage.CrashWorker <directory> [--async] [--encrypted]");
    return 2;
}
bool pipelined = args.Contains("--async");
using var key = args.Contains("--encrypted") ? RavenLite.Storage.Encryption.EncryptionKey.FromBytes(CrashModel.TestKey) : null;

var options = new StorageOptions
{
    Directory = Path.GetFullPath(args[0]),
    Durability = DurabilityMode.Sync,
    FlushIntervalMs = 20,
    FlushThresholdPages = 64,
    JournalFileSize = 256 * 1024,
    EncryptionKey = key,
};
using var env = StorageEnvironment.Open(options);
int next;
using (var r = env.ReadTransaction())
{
    var meta = r.ReadTree("meta");
    next = meta != null && meta.TryGet("last"u8, out var v) ? BinaryPrimitives.ReadInt32LittleEndian(v) + 1 : 0;
}
var stdout = Console.Out;
stdout.WriteLine($"READY {next}");
stdout.Flush();
Task? inFlight = null;
for (int i = next; ; i++)
{
    using (var tx = env.WriteTransaction())
    {
        var t = tx.CreateTree("t");
        t.Put(CrashModel.Key(i), CrashModel.Value(i));
        if (CrashModel.DeletesAt(i, out int victim))
            t.Delete(CrashModel.Key(victim));
        var last = new byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(last, i);
        tx.CreateTree("meta").Put("last"u8, last);
        if (!pipelined)
        {
            tx.Commit();
        }
        else
        {
            if (inFlight != null)
            {
                inFlight.GetAwaiter().GetResult();
                stdout.WriteLine($"ACK {i - 1}");
                stdout.Flush();
            }
            inFlight = tx.CommitAsync();
            continue;
        }
    }
    stdout.WriteLine($"ACK {i}");
    stdout.Flush();
}
