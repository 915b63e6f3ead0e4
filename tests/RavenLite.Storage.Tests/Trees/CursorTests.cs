using System.Text;
using RavenLite.Storage.Trees;
using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Trees;

public class CursorTests
{
    private static List<string> Keys() =>
        Enumerable.Range(0, 30_000).Select(i => $"{(char)('a' + i % 5)}/{i:D6}").Order(StringComparer.Ordinal).ToList();

    private static StorageHarness Filled(out List<string> keys)
    {
        var h = StorageHarness.InMemory();
        keys = Keys();
        using var tx = h.Env.WriteTransaction();
        var t = tx.CreateTree("c");
        foreach (var k in keys)
            t.Put(TestData.Bytes(k), TestData.Bytes("v:" + k));
        tx.Commit();
        return h;
    }

    private static List<string> Forward(TreeCursor c, bool positioned)
    {
        var list = new List<string>();
        if (!positioned)
            return list;
        do
        {
            list.Add(Encoding.UTF8.GetString(c.Key));
            Assert.Equal("v:" + list[^1], Encoding.UTF8.GetString(c.Value));
        }
        while (c.MoveNext());
        return list;
    }

    private static List<string> Backward(TreeCursor c, bool positioned)
    {
        var list = new List<string>();
        if (!positioned)
            return list;
        do
            list.Add(Encoding.UTF8.GetString(c.Key));
        while (c.MovePrevious());
        return list;
    }

    [Fact]
    public void Full_scans_both_directions()
    {
        using var h = Filled(out var keys);
        using var rtx = h.Env.ReadTransaction();
        var t = rtx.ReadTree("c")!;
        var c = t.CreateCursor();
        Assert.Equal(keys, Forward(c, c.SeekToFirst()));
        Assert.Equal(Enumerable.Reverse(keys).ToList(), Backward(c, c.SeekToLast()));
    }

    [Fact]
    public void Seek_prefix_and_range_scans()
    {
        using var h = Filled(out var keys);
        using var rtx = h.Env.ReadTransaction();
        var t = rtx.ReadTree("c")!;

        var c = t.CreateCursor();
        Assert.True(c.Seek(TestData.Bytes("b/000500")));
        Assert.Equal(keys.First(k => string.CompareOrdinal(k, "b/000500") >= 0), Encoding.UTF8.GetString(c.Key));

        var p = t.CreateCursor();
        p.Prefix = TestData.Bytes("c/");
        var expected = keys.Where(k => k.StartsWith("c/", StringComparison.Ordinal)).ToList();
        Assert.Equal(expected, Forward(p, p.SeekToFirst()));
        Assert.Equal(Enumerable.Reverse(expected).ToList(), Backward(p, p.SeekToLast()));

        var range = t.CreateCursor();
        range.EndKey = TestData.Bytes("a/001000");
        Assert.Equal(keys.Where(k => string.CompareOrdinal(k, "a/000100") >= 0 && string.CompareOrdinal(k, "a/001000") < 0).ToList(),
            Forward(range, range.Seek(TestData.Bytes("a/000100"))));

        var before = t.CreateCursor();
        Assert.True(before.SeekBefore(TestData.Bytes("b/")));
        Assert.Equal(keys.Last(k => string.CompareOrdinal(k, "b/") < 0), Encoding.UTF8.GetString(before.Key));
        Assert.False(before.SeekBefore(TestData.Bytes("a/")));

        var none = t.CreateCursor();
        Assert.False(none.Seek(TestData.Bytes("z")));
        none.Prefix = TestData.Bytes("q/");
        Assert.False(none.SeekToFirst());
        Assert.False(none.SeekToLast());
    }

    [Fact]
    public void Cursor_on_empty_and_missing_trees()
    {
        using var h = StorageHarness.InMemory();
        using (var tx = h.Env.WriteTransaction())
        {
            tx.CreateTree("empty");
            tx.Commit();
        }
        using var rtx = h.Env.ReadTransaction();
        Assert.Null(rtx.ReadTree("missing"));
        var c = rtx.ReadTree("empty")!.CreateCursor();
        Assert.False(c.SeekToFirst());
        Assert.False(c.SeekToLast());
        Assert.False(c.MoveNext());
        Assert.Throws<InvalidOperationException>(() => c.Key.Length);
        Assert.Equal(["empty"], rtx.GetTreeNames());
    }
}
