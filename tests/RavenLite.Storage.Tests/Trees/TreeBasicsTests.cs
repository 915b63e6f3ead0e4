using RavenLite.TestKit;

namespace RavenLite.Storage.Tests.Trees;

public class TreeBasicsTests
{
    [Fact]
    public void Put_then_get_in_same_and_later_transactions()
    {
        using var h = StorageHarness.InMemory();
        using (var tx = h.Env.WriteTransaction())
        {
            var t = tx.CreateTree("users");
            t.Put(TestData.Bytes("a"), TestData.Bytes("1"));
            t.Put(TestData.Bytes("b"), TestData.Bytes("2"));
            Assert.True(t.TryGet(TestData.Bytes("a"), out var v));
            Assert.Equal("1"u8.ToArray(), v.ToArray());
            tx.Commit();
        }
        using (var rtx = h.Env.ReadTransaction())
        {
            var t = rtx.ReadTree("users")!;
            Assert.Equal(2, t.Count);
            Assert.True(t.TryGet(TestData.Bytes("b"), out var v));
            Assert.Equal("2"u8.ToArray(), v.ToArray());
            Assert.False(t.TryGet(TestData.Bytes("c"), out _));
        }
    }
}
