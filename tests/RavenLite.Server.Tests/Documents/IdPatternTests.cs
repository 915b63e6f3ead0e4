using RavenLite.Server.Documents;

namespace RavenLite.Server.Tests.Documents;

public sealed class IdPatternTests
{
    [Theory]
    [InlineData("1*", "1", true)]
    [InlineData("1*", "10", true)]
    [InlineData("1*", "21", false)]
    [InlineData("?", "a", true)]
    [InlineData("?", "ab", false)]
    [InlineData("a?c", "ABC", true)] // any casing
    [InlineData("*b", "aab", true)]
    [InlineData("*b*", "xbx", true)]
    [InlineData("*b*", "xxx", false)]
    [InlineData("a*b*c", "a-b-b-c", true)]
    [InlineData("a*b*c", "a-b-b-d", false)]
    [InlineData("x|1?", "12", true)] // alternatives
    [InlineData("x|1?", "x", true)]
    [InlineData("x|1?", "1", false)]
    [InlineData("***", "", true)]
    [InlineData("a", "", false)]
    public void Globs_match_the_whole_tail(string pattern, string tail, bool expected) =>
        Assert.Equal(expected, IdPattern.Parse(pattern)!.IsMatch(tail));

    [Fact]
    public void An_absent_pattern_is_null_and_a_long_star_run_stays_linear()
    {
        Assert.Null(IdPattern.Parse(null));
        Assert.Null(IdPattern.Parse(""));
        var p = IdPattern.Parse(string.Concat(Enumerable.Repeat("*a", 200)) + "b")!;
        Assert.False(p.IsMatch(new string('a', 5000))); // backtracking regexes take exponential time here
    }
}
