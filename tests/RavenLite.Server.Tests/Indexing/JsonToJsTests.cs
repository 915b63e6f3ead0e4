using Jint;
using RavenLite.Server.Indexing.Scripting;

namespace RavenLite.Server.Tests.Indexing;

/// <summary>
/// The documents scripts see (indexes, patches, projections, ETL) are read from UTF-8 by <see cref="JsonToJs"/>: what
/// it builds must be what JavaScript's own JSON.parse builds from the same text, and as writable.
/// </summary>
public class JsonToJsTests
{
    public static TheoryData<string> Documents() =>
    [
        """{}""",
        """{"a":1,"b":-0,"c":0.1,"d":1e300,"e":-12345678901234567890,"f":3.14159e-10}""",
        """{"s":"plain","t":"tab\tnew\nline \"quoted\" back\\slash \u00e9 \ud83d\ude00 \u0000","":"empty name"}""",
        """{"n\u00e4me":"escaped name","na\"me":1,"ä":"raw utf-8 name"}""",
        """{"x":null,"y":true,"z":false,"arr":[],"obj":{},"mixed":[1,"two",null,true,{"k":[[]]},[1,[2,[3]]]]}""",
        """{"dup":1,"other":2,"dup":3}""",
        """{"__proto__":{"polluted":true},"constructor":"c","toString":"t","hasOwnProperty":1}""",
        """{"Lines":[{"Product":"products/1-A","Quantity":5,"Price":12.5},{"Product":"products/2-A","Quantity":1,"Price":0.05}],"@metadata":{"@collection":"Orders","@flags":"HasRevisions"}}""",
        "{\"deep\":" + string.Concat(Enumerable.Repeat("{\"d\":", 60)) + "1" + new string('}', 60) + "}",
        "{\"long\":\"" + new string('x', 100_000) + "\",\"" + new string('k', 300) + "\":\"a long name\"}",
        """[1,2,{"a":"b"}]""",
    ];

    [Theory]
    [MemberData(nameof(Documents))]
    public void Builds_what_JSON_parse_builds(string json)
    {
        var engine = new Engine();
        engine.SetValue("converted", JsonToJs.Parse(engine, Encoding.UTF8.GetBytes(json)));
        engine.SetValue("text", json);
        string Eval(string code) => engine.Evaluate(code).AsString();
        Assert.Equal(Eval("JSON.stringify(JSON.parse(text))"), Eval("JSON.stringify(converted)"));
        Assert.Equal(Eval("JSON.stringify(Object.keys(JSON.parse(text)))"), Eval("JSON.stringify(Object.keys(converted))"));
        Assert.Equal("true", Eval("String(Object.getPrototypeOf(JSON.parse(text)) === Object.getPrototypeOf(converted))"));
    }

    [Fact]
    public void Documents_nested_deeper_than_JSON_parse_allows_are_read()
    {
        var engine = new Engine();
        string json = string.Concat(Enumerable.Repeat("{\"d\":", 400)) + "1" + new string('}', 400);
        engine.SetValue("doc", JsonToJs.Parse(engine, Encoding.UTF8.GetBytes(json)));
        Assert.Equal(1, engine.Evaluate("var x = doc; while (typeof x === 'object') x = x.d; x").AsNumber());
    }

    [Fact]
    public void What_it_builds_is_writable_and_shares_names_across_documents()
    {
        var engine = new Engine();
        var a = JsonToJs.Parse(engine, """{"Name":"a","Tags":["x"],"Address":{"City":"Oslo"}}"""u8);
        engine.SetValue("doc", a);
        engine.Execute("doc.Name = 'b'; doc.Tags.push('y'); delete doc.Address.City; doc.Address.Zip = '0150'; doc.New = 1;");
        Assert.Equal("""{"Name":"b","Tags":["x","y"],"Address":{"Zip":"0150"},"New":1}""", engine.Evaluate("JSON.stringify(doc)").AsString());
        var b = (Jint.Native.Object.ObjectInstance)JsonToJs.Parse(engine, """{"Name":"c"}"""u8);
        var first = ((Jint.Native.Object.ObjectInstance)a).GetOwnPropertyKeys().First().AsString();
        Assert.Same(first, b.GetOwnPropertyKeys().First().AsString());

        // Short values are shared between documents too; changing one document's value leaves the other's.
        engine.SetValue("x", JsonToJs.Parse(engine, """{"Status":"Pending"}"""u8));
        engine.SetValue("y", JsonToJs.Parse(engine, """{"Status":"Pending"}"""u8));
        engine.Execute("x.Status += ' review'; x.Status = x.Status.toUpperCase();");
        Assert.Equal("""["PENDING REVIEW","Pending"]""", engine.Evaluate("JSON.stringify([x.Status, y.Status])").AsString());
    }
}
