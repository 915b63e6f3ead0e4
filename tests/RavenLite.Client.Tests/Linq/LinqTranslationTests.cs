using System.Text.Json.Nodes;
using RavenLite.Client.Linq;

namespace RavenLite.Client.Tests.Linq;

internal sealed class Box;

internal sealed class Person;

internal sealed class Key;

/// <summary>LINQ → RQL text and parameters; no server involved (translation only).</summary>
public sealed class LinqTranslationTests : IDisposable
{
    private readonly DocumentStore _store = new DocumentStore { Urls = ["http://127.0.0.1:1"], Database = "x" }.Initialize();
    private readonly RavenLite.Client.Session.IAsyncDocumentSession _session;

    public LinqTranslationTests() => _session = _store.OpenAsyncSession();

    private static (string Rql, JsonObject Parameters) Rql<T>(IQueryable<T> q)
    {
        var r = (RavenQueryable<T>)q;
        var t = r.RavenProvider.Translate(r.Expression);
        return (t.Rql, t.Parameters);
    }

    private static string Params(JsonObject p) => p.ToJsonString();

    [Fact]
    public void Comparisons_and_boolean_logic()
    {
        int minAge = 30;
        var (rql, p) = Rql(_session.Query<User>().Where(u => u.Age >= minAge && (u.Name == "Bob" || u.Name != "Al") && !(u.Score < 1.5)));
        Assert.Equal("from 'Users' where ((Age >= $p0 and (Name = $p1 or Name != $p2)) and Score >= $p3)", rql);
        Assert.Equal("""{"p0":30,"p1":"Bob","p2":"Al","p3":1.5}""", Params(p));
    }

    [Fact]
    public void Constant_on_the_left_flips_the_operator_and_bools_become_comparisons()
    {
        var (rql, p) = Rql(_session.Query<User>().Where(u => 18 < u.Age && u.Active && !u.Active));
        Assert.Equal("from 'Users' where ((Age > $p0 and Active = $p1) and Active = $p2)", rql);
        Assert.Equal("""{"p0":18,"p1":true,"p2":false}""", Params(p));
    }

    [Fact]
    public void StartsWith_In_Contains_Search_and_nested_fields()
    {
        var names = new[] { "a", "b" };
        var (rql, p) = Rql(_session.Query<User>()
            .Where(u => u.Name.StartsWith("Jo") && u.Age.In(new[] { 1, 2 }) && names.Contains(u.Name) && u.Address!.City.Search("new york") && u.Address.Country == "US"));
        Assert.Equal("from 'Users' where ((((startsWith(Name, $p0) and Age in ($p1)) and Name in ($p2)) and search(Address.City, $p3)) and Address.Country = $p4)", rql);
        Assert.Equal("""{"p0":"Jo","p1":[1,2],"p2":["a","b"],"p3":"new york","p4":"US"}""", Params(p));
    }

    [Fact]
    public void Ordering_paging_and_projection()
    {
        var (rql, p) = Rql(_session.Query<User>().Where(u => u.Age > 1).OrderByDescending(u => u.Age).ThenBy(u => u.Name).ThenBy(u => u.Score)
            .Skip(10).Take(5).Select(u => new { u.Name, Town = u.Address!.City }));
        Assert.Equal("from 'Users' where Age > $p0 order by Age as long desc, Name, Score as double select Name, Address.City as Town limit $p1, $p2", rql);
        Assert.Equal("""{"p0":1,"p1":10,"p2":5}""", Params(p));
    }

    [Fact]
    public void Select_distinct_of_one_field_and_identity_field()
    {
        var (rql, _) = Rql(_session.Query<User>().Where(u => u.Id == "users/1-A").Select(u => u.Name).Distinct());
        Assert.Equal("from 'Users' where id() = $p0 select distinct Name", rql);
    }

    [Fact]
    public void Index_queries_and_explicit_collections()
    {
        Assert.Equal("from index 'Users/ByName' where Name = $p0", _session.Query<User>("Users/ByName").Where(u => u.Name == "x").ToRql());
        Assert.Equal("from 'People'", _session.Query<User>(collectionName: "People").ToRql());
        Assert.Equal("from 'Companies'", _session.Query<Company>().ToRql());
        Assert.Equal("from 'Categories'", _session.Query<Category>().ToRql());
        Assert.Equal("Boxes", DocumentConventions.DefaultCollectionName(typeof(Box)));
        Assert.Equal("People", DocumentConventions.DefaultCollectionName(typeof(Person)));
        Assert.Equal("Keys", DocumentConventions.DefaultCollectionName(typeof(Key)));
    }

    [Fact]
    public void Terminal_operators_page_the_query()
    {
        var q = _session.Query<User>().Where(u => u.Age == 3);
        Assert.Equal("from 'Users' where Age = $p0 limit $p1, $p2", Rql(q.Take(7)).Rql);
        var provider = ((RavenQueryable<User>)q).RavenProvider;
        var first = provider.Translate(System.Linq.Expressions.Expression.Call(typeof(Queryable), nameof(Queryable.FirstOrDefault), [typeof(User)], q.Expression));
        Assert.Equal(TerminalOperation.First, first.Terminal);
        Assert.Equal("""{"p0":3,"p1":0,"p2":1}""", Params(first.Parameters));
        var count = provider.Translate(System.Linq.Expressions.Expression.Call(typeof(Queryable), nameof(Queryable.Count), [typeof(User)], q.Expression));
        Assert.Equal("""{"p0":3,"p1":0,"p2":0}""", Params(count.Parameters));
    }

    [Fact]
    public void Unsupported_expressions_throw_NotSupportedException_naming_them()
    {
        var e1 = Assert.Throws<NotSupportedException>(() => _session.Query<User>().Where(u => u.Name.Length > 3).ToRql());
        Assert.Contains("Length", e1.Message, StringComparison.Ordinal);
        var e2 = Assert.Throws<NotSupportedException>(() => _session.Query<User>().Where(u => u.Name.EndsWith('x')).ToRql());
        Assert.Contains("EndsWith", e2.Message, StringComparison.Ordinal);
        var e3 = Assert.Throws<NotSupportedException>(() => _session.Query<User>().GroupBy(u => u.Age).Select(g => g.Key).ToRql());
        Assert.Contains("GroupBy", e3.Message, StringComparison.Ordinal);
        var e4 = Assert.Throws<NotSupportedException>(() => _session.Query<User>().Where(u => u.Age == u.Score).ToRql());
        Assert.Contains("u.Age", e4.Message, StringComparison.Ordinal);
    }

    public void Dispose()
    {
        _session.Dispose();
        _store.Dispose();
    }
}
