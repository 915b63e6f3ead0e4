using RavenLite.Server.Indexing;

namespace RavenLite.Server.Tests.Indexing;

/// <summary>The similarities behind suggest(), against published figures for each measure.</summary>
public sealed class SuggesterTests
{
    [Theory]
    [InlineData("kitten", "sitting", 1 - 3f / 7)] // 3 edits
    [InlineData("chair", "chairs", 1 - 1f / 6)]
    [InlineData("abc", "abc", 1f)]
    [InlineData("abc", "", 0f)]
    public void Levenshtein_is_one_minus_edits_over_the_longer_length(string a, string b, float expected) =>
        Assert.Equal(expected, Suggester.Similarity("Levenshtein", a, b), 5);

    [Theory]
    [InlineData("martha", "marhta", 0.9611)] // Winkler's examples
    [InlineData("dwayne", "duane", 0.84)]
    [InlineData("dixon", "dicksonx", 0.8133)]
    [InlineData("abc", "xyz", 0)]
    public void JaroWinkler_matches_winklers_examples(string a, string b, double expected) =>
        Assert.Equal(expected, Suggester.Similarity("JaroWinkler", a, b), 3);

    /// <summary>Lucene's NGramDistance (bigrams), the figures of its own tests.</summary>
    [Theory]
    [InlineData("al", "al", 1)]
    [InlineData("a", "a", 1)]
    [InlineData("b", "a", 0)]
    [InlineData("martha", "marhta", 0.6666)]
    [InlineData("jones", "johnson", 0.4285)]
    [InlineData("natural", "contrary", 0.25)]
    [InlineData("abcvwxyz", "cabvwxyz", 0.625)]
    [InlineData("a", "aa", 0.5)]
    [InlineData("dwayne", "duane", 0.5833)]
    [InlineData("dixon", "dicksonx", 0.5)]
    [InlineData("six", "ten", 0)]
    public void NGram_is_kondraks_bigram_distance(string a, string b, double expected) =>
        Assert.InRange(Suggester.Similarity("NGram", a, b), expected - 0.001, expected + 0.001);
}
