using System.Buffers;
using RavenLite.Server.Documents;
using RavenLite.Server.Errors;
using RavenLite.Server.Formatting;

namespace RavenLite.Server.Tests.Documents;

/// <summary>The one-pass document check and prepared form (no server: the cases the endpoint tests do not reach).</summary>
public sealed class DocumentPreparerTests
{
    private static (string Prepared, int Prefix, string Collection) Prepare(string json)
    {
        var output = new ArrayBufferWriter<byte>();
        int prefix = DocumentPreparer.Current.Prepare(Encoding.UTF8.GetBytes(json), output, out string collection);
        return (Encoding.UTF8.GetString(output.WrittenSpan), prefix, collection);
    }

    private static string Rejected(string json) => Assert.Throws<BadRequestException>(() => Prepare(json)).Message;

    [Theory]
    [InlineData("{\"a\":1,\"\\u0061\":2}")]                 // the same name, escaped
    [InlineData("{\"x\":{\"a\":1,\"b\":2,\"a\":3}}")]       // nested
    [InlineData("{\"x\":[{\"a\":1},{\"b\":1,\"b\":2}]}")]   // in an array
    [InlineData("{\"@metadata\":{\"k\":1,\"k\":2}}")]       // in metadata
    public void Duplicate_keys_are_found_at_any_level(string json) =>
        Assert.Contains("Duplicate property", Rejected(json));

    [Fact]
    public void Large_objects_check_duplicates_through_the_hash_set_both_ways()
    {
        // Past 16 properties the check switches from a scan to a hash set: distinct names pass, a repeat anywhere fails.
        string Props(int n) => string.Join(",", Enumerable.Range(0, n).Select(i => $"\"p{i}\":{i}"));
        var (prepared, prefix, _) = Prepare("{" + Props(500) + "}");
        using (var d = JsonDocument.Parse(prepared[..prefix] + "{\"k\":0" + prepared[prefix..])) // the stored form opens @metadata with the server's keys here
            Assert.Equal(501, d.RootElement.EnumerateObject().Count());
        Assert.Contains("'p3'", Rejected("{" + Props(500) + ",\"p3\":0}"));
        Assert.Contains("'p20'", Rejected("{" + Props(40) + ",\"x\":{" + Props(30) + "},\"p20\":0}"));
        // A nested object's names do not count against its parent's, nor siblings' against each other.
        Prepare("{" + Props(20) + ",\"o\":{" + Props(20) + "},\"q\":{" + Props(20) + "}}");
    }

    [Fact]
    public void The_same_names_in_different_objects_are_fine_and_the_prepared_form_keeps_raw_values()
    {
        var (prepared, prefix, collection) = Prepare("{ \"a\" : {\"x\":1}, \"b\": [ {\"x\":1},{\"x\":1} ], \"s\":\"\\u00e9\\n\", \"n\":1e400, \"@metadata\":{\"@collection\":\"Users\",\"@id\":\"ignored\",\"Raven-Node-Type\":\"T\",\"@change-vector\":\"x\",\"@last-modified\":\"y\"}}");
        Assert.Equal("Users", collection);
        Assert.Equal("{\"a\":{\"x\":1},\"b\":[ {\"x\":1},{\"x\":1} ],\"s\":\"\\u00e9\\n\",\"n\":1e400,\"@metadata\":", prepared[..prefix]);
        Assert.Equal(",\"Raven-Node-Type\":\"T\"}}", prepared[prefix..]);
    }

    [Theory]
    [InlineData("{}", "@empty")]
    [InlineData("{\"@metadata\":{}}", "@empty")]
    [InlineData("{\"@metadata\":{\"@collection\":null}}", "@empty")]
    [InlineData("{\"@metadata\":{\"@collection\":\"\"}}", "@empty")]
    [InlineData("{\"@metadata\":{\"\\u0040collection\":\"Orders\"}}", "Orders")]
    public void Collection_comes_from_metadata(string json, string expected)
    {
        var (prepared, prefix, collection) = Prepare(json);
        Assert.Equal(expected, collection);
        Assert.EndsWith("\"@metadata\":", prepared[..prefix]);
        Assert.Equal("}}", prepared[prefix..]);
    }

    [Theory]
    [InlineData("{\"@metadata\":{\"@collection\":1}}", "@collection must be a string")]
    [InlineData("{\"@metadata\":\"x\"}", "@metadata must be a JSON object")]
    [InlineData("[]", "must be a JSON object")]
    [InlineData("{\"a\":1} x", "Invalid JSON")]
    [InlineData("{\"a\":\"\\ud800\"}", "")] // a lone surrogate escape in a value is kept verbatim (System.Text.Json allows it)
    public void Bad_shapes_are_named(string json, string expected)
    {
        if (expected.Length == 0)
        {
            Prepare(json);
            return;
        }
        Assert.Contains(expected, Rejected(json));
    }

    [Fact]
    public void Depth_64_passes_and_65_fails()
    {
        string Nest(int levels) => string.Concat(Enumerable.Repeat("{\"a\":", levels - 1)) + "{}" + new string('}', levels - 1);
        Prepare(Nest(64));
        Assert.Contains("at most 64 levels", Rejected(Nest(65)));
    }
}

/// <summary>Dates in metadata and answers: RavenDB's shape, whatever the DateTimeKind of the value.</summary>
public sealed class DateFormatTests
{
    [Theory]
    [InlineData(638_000_000_000_000_000L)]
    [InlineData(1L)]
    [InlineData(3_155_378_975_999_999_999L)] // DateTime.MaxValue
    public void Dates_have_seven_fraction_digits_and_z_for_every_kind(long ticks)
    {
        Span<byte> utf8 = stackalloc byte[JsonDates.DateLength];
        foreach (var kind in new[] { DateTimeKind.Utc, DateTimeKind.Unspecified })
        {
            var t = new DateTime(ticks, kind);
            string expected = t.ToString("yyyy-MM-dd'T'HH:mm:ss.fffffff'Z'", System.Globalization.CultureInfo.InvariantCulture);
            Assert.Equal(expected, JsonDates.FormatDate(t));
            Assert.Equal(expected, Encoding.UTF8.GetString(utf8[..JsonDates.FormatDate(t, utf8)]));
        }
    }
}
