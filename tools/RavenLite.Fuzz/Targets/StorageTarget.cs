using System.Text;
using RavenLite.Storage;
using RavenLite.Storage.Platform;

namespace RavenLite.Fuzz.Targets;

/// <summary>
/// Storage files damaged at random (docs/reliability.md "Fuzzing"): a seed environment is written once — commits of
/// known keys, some flushed to the data file, the rest only in the journal — and its files are copied as a crash would
/// leave them. Each input is a list of edits to those files (<see cref="ByteEdits"/>); the damaged copy is
/// opened and read whole. What may happen: the files open and read exactly as after some prefix of the commits
/// (recovery stops at the first damaged journal record), or opening or reading throws
/// <see cref="StorageCorruptionException"/>. Anything else — another exception, data no commit wrote — is a finding.
/// </summary>
public sealed class StorageTarget : IFuzzTarget
{
    private const string TreeName = "t";
    private const int Commits = 12;
    private const int FlushedCommits = 6;

    private readonly SortedDictionary<string, byte[]> _seed = new(StringComparer.Ordinal);
    private readonly List<string> _states = []; // the tree's content after each prefix of the commits, as text

    public StorageTarget()
    {
        var fs = new MemoryFileSystem();
        var env = StorageEnvironment.Open(Options(fs));
        var model = new SortedDictionary<string, string>(StringComparer.Ordinal);
        _states.Add(Describe(model));
        for (int c = 1; c <= Commits; c++)
        {
            using (var tx = env.WriteTransaction())
            {
                var t = tx.CreateTree(TreeName);
                for (int i = 0; i < 40; i++)
                {
                    string key = $"k{(c * 7 + i * 13) % 97:D3}";
                    string value = new string((char)('a' + c % 26), 10 + (c * i) % 700) + c;
                    t.Put(Encoding.UTF8.GetBytes(key), Encoding.UTF8.GetBytes(value));
                    model[key] = value;
                }
                if (c % 3 == 0 && t.Delete(Encoding.UTF8.GetBytes($"k{c:D3}")))
                    model.Remove($"k{c:D3}");
                tx.Commit();
            }
            _states.Add(Describe(model));
            if (c == FlushedCommits)
                env.Flush();
        }
        foreach (var file in fs.AllFiles)
            _seed[file] = fs.ReadAllBytes(file); // as a crash leaves them: the environment is never closed
        GC.KeepAlive(env);
    }

    private static StorageOptions Options(MemoryFileSystem fs) => new()
    {
        Directory = "/mem",
        FileSystem = fs,
        InitialMapSize = 64L << 20,
        JournalFileSize = 256 * 1024,
        BackgroundFlush = false,
    };

    public void Run(ReadOnlySpan<byte> input)
    {
        using var fs = new MemoryFileSystem();
        var files = _seed.ToDictionary(kv => kv.Key, kv => kv.Value, StringComparer.Ordinal);
        ByteEdits.Apply(files, input);
        foreach (var (path, bytes) in files)
            fs.WriteAllBytes(path, bytes);
        string content;
        try
        {
            using var env = StorageEnvironment.Open(Options(fs));
            content = Read(env);
        }
        catch (StorageCorruptionException)
        {
            return; // detected and refused: what the product promises
        }
        if (!_states.Contains(content))
            throw new FuzzFindingException($"the damaged files opened and read data that no prefix of the commits wrote: {content[..Math.Min(400, content.Length)]}");
    }

    private static string Read(StorageEnvironment env)
    {
        using var tx = env.ReadTransaction();
        var tree = tx.ReadTree(TreeName);
        var model = new SortedDictionary<string, string>(StringComparer.Ordinal);
        if (tree != null)
        {
            var c = tree.CreateCursor();
            for (bool ok = c.SeekToFirst(); ok; ok = c.MoveNext())
                model[Encoding.UTF8.GetString(c.Key)] = Encoding.UTF8.GetString(c.Value);
            if (model.Count != tree.Count)
                throw new FuzzFindingException($"the tree counts {tree.Count} entries, its cursor read {model.Count}");
        }
        return Describe(model);
    }

    private static string Describe(SortedDictionary<string, string> model) => string.Join('\n', model.Select(kv => kv.Key + "=" + kv.Value));

    public void Dispose()
    {
    }
}
