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

    [Fact]
    public void NGram_is_the_dice_coefficient_of_padded_bigrams()
    {
        // " night " and " nacht ": bigrams " n","ni","ig","gh","ht","t " / " n","na","ac","ch","ht","t ": 3 shared of 6 + 6.
        Assert.Equal(0.5f, Suggester.Similarity("NGram", "night", "nacht"), 5);
        Assert.Equal(1f, Suggester.Similarity("NGram", "same", "same"), 5);
    }
}
