using RavenLite.Server.BulkInsert;

namespace RavenLite.Server.Tests.BulkInsert;

public sealed class BodyDrainerTests
{
    [Fact]
    public void The_array_ends_at_its_own_closing_bracket_not_at_brackets_in_strings()
    {
        const string body = """ [{"Id":"a]","Document":{"x":"\"]","y":[1,[2]]}},{"Id":"b\\"}] trailing""";
        int end = body.IndexOf("] trailing", StringComparison.Ordinal) + 1;
        // Fed one byte at a time (strings, escapes and nesting carry across pieces), then all at once.
        var oneByOne = BodyDrainer.FromStart();
        var bytes = Encoding.UTF8.GetBytes(body);
        int consumed = 0;
        foreach (byte b in bytes)
        {
            if (oneByOne.Done)
                break;
            consumed += oneByOne.Feed([b]);
        }
        Assert.True(oneByOne.Done);
        Assert.Equal(end, consumed);
        var whole = BodyDrainer.FromStart();
        Assert.Equal(end, whole.Feed(bytes));
        Assert.True(whole.Done);
    }

    [Fact]
    public void Inside_the_array_a_drainer_starts_at_depth_one_and_a_non_array_body_reads_to_its_end()
    {
        var inside = BodyDrainer.InsideArray();
        inside.Feed(Encoding.UTF8.GetBytes("""{"Id":"x","Document":{}} , {"Id":"y"}"""));
        Assert.False(inside.Done);
        inside.Feed(Encoding.UTF8.GetBytes(" ]"));
        Assert.True(inside.Done);
        var notArray = BodyDrainer.FromStart();
        Assert.Equal(9, notArray.Feed(Encoding.UTF8.GetBytes("""{"a":[]}]""")));
        Assert.False(notArray.Done); // only the end of the body ends it
    }
}
