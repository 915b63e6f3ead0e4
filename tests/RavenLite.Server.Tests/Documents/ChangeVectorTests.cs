using RavenLite.Server.Documents;

namespace RavenLite.Server.Tests.Documents;

/// <summary>Change vectors (docs/replication.md "Change vectors"): parsing, comparison, merging into one canonical form.</summary>
public sealed class ChangeVectorTests
{
    [Theory]
    [InlineData("A:5-x", null, ChangeVectorOrder.Newer)]
    [InlineData("A:5-x", "A:5-x", ChangeVectorOrder.NotNewer)]
    [InlineData("A:4-x", "A:5-x", ChangeVectorOrder.NotNewer)]
    [InlineData("A:6-x", "A:5-x", ChangeVectorOrder.Newer)]
    [InlineData("A:6-x, B:1-y", "A:5-x", ChangeVectorOrder.Newer)]
    [InlineData("A:6-x", "A:5-x, B:1-y", ChangeVectorOrder.Concurrent)]
    [InlineData("A:6-x, B:1-y", "A:5-x, B:2-y", ChangeVectorOrder.Concurrent)]
    [InlineData("B:2-y, A:5-x", "A:5-x, B:2-y", ChangeVectorOrder.NotNewer)]
    [InlineData("B:1-y", "A:5-x", ChangeVectorOrder.Concurrent)]
    public void Compare_orders_an_incoming_version_against_the_held_one(string remote, string? local, ChangeVectorOrder expected) =>
        Assert.Equal(expected, ChangeVectors.Compare(remote, local));

    [Fact]
    public void Merge_takes_each_instance_s_largest_etag_in_one_order_whichever_side_merges()
    {
        Assert.Equal("A:7-x, B:3-y", ChangeVectors.Merge("B:3-y, A:2-x", "A:7-x"));
        Assert.Equal(ChangeVectors.Merge("A:1-x", "A:1-y"), ChangeVectors.Merge("A:1-y", "A:1-x"));
        Assert.Equal("A:9-x, B:3-y", ChangeVectors.WithEntry("B:3-y, A:2-x", "A", 9, "x"));
        Assert.Equal("B:3-y", ChangeVectors.Without("A:2-x, B:3-y", "x"));
    }

    [Theory]
    [InlineData("A:x-y")]
    [InlineData("A5-x")]
    [InlineData("A:5-")]
    [InlineData(":5-x")]
    public void A_malformed_change_vector_is_a_400(string changeVector) =>
        Assert.Throws<RavenLite.Server.Errors.BadRequestException>(() => ChangeVectors.Parse(changeVector));
}
