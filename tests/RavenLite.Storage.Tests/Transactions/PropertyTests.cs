using System.Text;
using CsCheck;
using RavenLite.Storage.Platform;
using RavenLite.Storage.Transactions;
using RavenLite.TestKit;
using Xunit.Abstractions;

namespace RavenLite.Storage.Tests.Transactions;

/// <summary>
/// docs/reliability.md "Property tests": CsCheck generates sequences of put, delete, read, commit, rollback, snapshot,
/// reopen and crash, runs each against the engine and against sorted dictionaries, and shrinks a failing sequence to
/// a shortest one. A crash copies the files as they are while the environment is open (nothing closed, nothing
/// flushed on the way out) and opens the copy: every committed transaction must be there and nothing else.
/// CsCheck prints the seed of a failure; CsCheck_Seed replays it.
/// </summary>
public class PropertyTests(ITestOutputHelper output)
{
    private enum Kind { Put, Delete, Read, Commit, Rollback, Snapshot, CheckSnapshots, Flush, Reopen, Crash }

    private sealed record Op(Kind Kind, int Tree, int Key, int Size)
    {
        public override string ToString() => Kind switch
        {
            Kind.Put => $"Put(t{Tree}, k{Key}, {Size}B)",
            Kind.Delete or Kind.Read => $"{Kind}(t{Tree}, k{Key})",
            _ => Kind.ToString(),
        };
    }

    private static readonly Gen<int> Trees = Gen.Int[0, 2];
    private static readonly Gen<int> Keys = Gen.Int[0, 80];

    private static readonly Gen<Op> Ops = Gen.Frequency(
        (40, Gen.Select(Trees, Keys, Gen.Frequency((9, Gen.Int[0, 400]), (1, Gen.Int[3_000, 20_000])), (t, k, s) => new Op(Kind.Put, t, k, s))),
        (15, Gen.Select(Trees, Keys, (t, k) => new Op(Kind.Delete, t, k, 0))),
        (10, Gen.Select(Trees, Keys, (t, k) => new Op(Kind.Read, t, k, 0))),
        (12, Gen.Const(new Op(Kind.Commit, 0, 0, 0))),
        (4, Gen.Const(new Op(Kind.Rollback, 0, 0, 0))),
        (4, Gen.Const(new Op(Kind.Snapshot, 0, 0, 0))),
        (4, Gen.Const(new Op(Kind.CheckSnapshots, 0, 0, 0))),
        (3, Gen.Const(new Op(Kind.Flush, 0, 0, 0))),
        (2, Gen.Const(new Op(Kind.Reopen, 0, 0, 0))),
        (2, Gen.Const(new Op(Kind.Crash, 0, 0, 0))));

    [Fact]
    public void Every_sequence_of_operations_matches_the_model() =>
        Ops.Array[1, 120].Sample(ops =>
        {
            using var run = new Run();
            run.Execute(ops);
        }, iter: 300, threads: 1, writeLine: output.WriteLine,
            print: ops => string.Join(", ", ops));

    /// <summary>One sequence's engine and model.</summary>
    private sealed class Run : IDisposable
    {
        private readonly List<(ReadTransaction Tx, Model State)> _snapshots = [];
        private MemoryFileSystem _files = new();
        private StorageEnvironment _env;
        private WriteTransaction? _tx;
        private Model _committed = new();
        private Model _staged = new();

        public Run() => _env = StorageEnvironment.Open(Options(_files));

        public void Execute(Op[] ops)
        {
            foreach (var op in ops)
                Apply(op);
            EndTransaction(commit: true);
            Verify(_env, _committed);
        }

        public void Dispose()
        {
            CloseSnapshots();
            _tx?.Dispose();
            _env.Dispose();
            _files.Dispose();
        }

        private static StorageOptions Options(MemoryFileSystem files) => new()
        {
            Directory = "/mem",
            FileSystem = files,
            InitialMapSize = 256L << 20,
            JournalFileSize = 128 * 1024,
            FlushThresholdPages = 200,
            BackgroundFlush = false,
        };

        private void Apply(Op op)
        {
            string tree = $"t{op.Tree}";
            byte[] key = Encoding.ASCII.GetBytes($"k{op.Key:D3}");
            switch (op.Kind)
            {
                case Kind.Put:
                    var value = Value(op);
                    Write().CreateTree(tree).Put(key, value);
                    _staged.Put(tree, key, value);
                    break;
                case Kind.Delete:
                    Assert.Equal(_staged.Delete(tree, key), Write().CreateTree(tree).Delete(key));
                    break;
                case Kind.Read:
                    Read(tree, key);
                    break;
                case Kind.Commit:
                    EndTransaction(commit: true);
                    break;
                case Kind.Rollback:
                    EndTransaction(commit: false);
                    break;
                case Kind.Snapshot:
                    _snapshots.Add((_env.ReadTransaction(), _committed.Copy()));
                    break;
                case Kind.CheckSnapshots:
                    foreach (var (tx, state) in _snapshots)
                        Verify(tx, state);
                    CloseSnapshots();
                    break;
                case Kind.Flush:
                    _env.Flush();
                    break;
                case Kind.Reopen:
                    EndTransaction(commit: false);
                    CloseSnapshots();
                    _env.Dispose();
                    _env = StorageEnvironment.Open(Options(_files));
                    Verify(_env, _committed);
                    break;
                case Kind.Crash:
                    // The files as they are right now, the open transaction and snapshots abandoned mid-way.
                    var copy = new MemoryFileSystem();
                    foreach (var file in _files.AllFiles)
                        copy.WriteAllBytes(file, _files.ReadAllBytes(file));
                    EndTransaction(commit: false);
                    CloseSnapshots();
                    _env.Dispose();
                    _files.Dispose();
                    _files = copy;
                    _env = StorageEnvironment.Open(Options(_files));
                    Verify(_env, _committed);
                    StorageHarness.AssertConsistent(_env);
                    break;
            }
        }

        private static byte[] Value(Op op)
        {
            var value = new byte[op.Size];
            for (int i = 0; i < value.Length; i++)
                value[i] = (byte)(op.Key * 31 + op.Tree * 7 + i * 13 + op.Size);
            return value;
        }

        private WriteTransaction Write() => _tx ??= _env.WriteTransaction();

        private void Read(string tree, byte[] key)
        {
            bool expected = _staged.TryGet(tree, key, out var value);
            if (_tx != null)
            {
                var t = _tx.ReadTree(tree);
                Assert.Equal(expected, t != null && t.TryGet(key, out var actual) && actual.SequenceEqual(value));
                return;
            }
            using var rtx = _env.ReadTransaction();
            var r = rtx.ReadTree(tree);
            Assert.Equal(expected, r != null && r.TryGet(key, out var read) && read.SequenceEqual(value));
        }

        private void EndTransaction(bool commit)
        {
            if (_tx == null)
                return;
            if (commit)
            {
                _tx.Commit();
                _committed = _staged.Copy();
            }
            _tx.Dispose();
            _tx = null;
            _staged = _committed.Copy();
        }

        private void CloseSnapshots()
        {
            foreach (var (tx, _) in _snapshots)
                tx.Dispose();
            _snapshots.Clear();
        }

        private static void Verify(StorageEnvironment env, Model model)
        {
            using var tx = env.ReadTransaction();
            Verify(tx, model);
        }

        private static void Verify(Transaction tx, Model model)
        {
            foreach (var (name, entries) in model.Trees)
            {
                var tree = tx.ReadTree(name);
                if (tree == null)
                {
                    Assert.Empty(entries);
                    continue;
                }
                Assert.Equal(entries.Count, tree.Count);
                var c = tree.CreateCursor();
                bool ok = c.SeekToFirst();
                foreach (var (key, value) in entries)
                {
                    Assert.True(ok, $"{name}: {key} missing");
                    Assert.Equal(key, Encoding.ASCII.GetString(c.Key));
                    Assert.True(c.Value.SequenceEqual(value), $"{name}: {key} has another value");
                    ok = c.MoveNext();
                }
                Assert.False(ok, $"{name}: more entries than the model");
            }
        }
    }

    /// <summary>The model: per tree, its entries in key order.</summary>
    private sealed class Model
    {
        public Dictionary<string, SortedDictionary<string, byte[]>> Trees { get; private init; } = [];

        public void Put(string tree, byte[] key, byte[] value) => Tree(tree)[Encoding.ASCII.GetString(key)] = value;

        public bool Delete(string tree, byte[] key) => Tree(tree).Remove(Encoding.ASCII.GetString(key));

        public bool TryGet(string tree, byte[] key, out byte[] value) => Tree(tree).TryGetValue(Encoding.ASCII.GetString(key), out value!);

        public Model Copy() => new() { Trees = Trees.ToDictionary(kv => kv.Key, kv => new SortedDictionary<string, byte[]>(kv.Value, StringComparer.Ordinal)) };

        private SortedDictionary<string, byte[]> Tree(string name)
        {
            if (!Trees.TryGetValue(name, out var t))
                Trees[name] = t = new SortedDictionary<string, byte[]>(StringComparer.Ordinal);
            return t;
        }
    }
}
