using System.Globalization;
using System.Text;
using System.Text.Json;
using RavenLite.Server.Http;
using RavenLite.Server.Queries;

namespace RavenLite.Server.Indexing;

/// <summary>
/// Turns an index definition into a <see cref="CompiledIndex"/>. Static maps are read by a small
/// parser for the projection forms RavenDB clients send (PROTOCOL.md §8); Jint, which RavenDB
/// uses for JavaScript, does not restore here in a version that parses arrow functions
/// (docs/dependencies.md), so JavaScript maps go through the same parser:
/// <list type="bullet">
/// <item><c>from u in docs.Users select new { u.Name, Full = u.First + " " + u.Last }</c></item>
/// <item><c>docs.Users.Select(u => new { u.Name, City = u.Address.City })</c></item>
/// <item><c>map('Users', u => ({ name: u.Name, city: u.Address.City }))</c>, and the
/// <c>function (u) { return { ... }; }</c> form</item>
/// </list>
/// Values are paths on the document (arrays on the way are flattened), string and number
/// literals, <c>id(u)</c>/<c>Id(u)</c>, <c>u.Lines.Select(l =&gt; l.Product)</c> (JavaScript: <c>.map</c>),
/// and <c>+</c> (numbers add, otherwise strings concatenate).
/// Anything else — where clauses, method calls, reduce — is an IndexCompilationException naming the
/// problem and the text.
/// </summary>
public static class MapCompiler
{
    /// <summary>Compiles <paramref name="definition"/> (400 IndexCompilationException when it is outside the supported forms).</summary>
    public static CompiledIndex Compile(IndexDefinition definition)
    {
        if (definition.IsAuto)
        {
            var fields = definition.AutoFields.Select((f, i) => new IndexField(f.Path, (ushort)i, f.Search ? FieldIndexing.Search : FieldIndexing.Default)).ToList();
            var exprs = definition.AutoFields.Select(f => (MapExpression)new PathExpression(f.Path.Split('.'))).ToList();
            return new CompiledIndex([definition.Collection!], fields, new Dictionary<string, List<MapExpression>>(StringComparer.OrdinalIgnoreCase) { [definition.Collection!] = exprs });
        }
        if (definition.Maps.Count == 0)
            throw ApiException.IndexCompilation($"Index '{definition.Name}' has no maps.", "Maps", "");
        var names = new List<string>();
        var parsed = new List<(string Collection, List<(string Name, MapExpression Expr)> Members)>();
        foreach (string map in definition.Maps)
        {
            var (collection, members) = new Parser(map).ParseMap();
            parsed.Add((collection, members));
            foreach (var (name, _) in members)
                if (!names.Contains(name, StringComparer.Ordinal))
                    names.Add(name);
        }
        var options = new Dictionary<string, FieldIndexing>(StringComparer.Ordinal);
        var analyzers = new Dictionary<string, string>(StringComparer.Ordinal);
        foreach (var (name, element) in definition.FieldOptions)
        {
            FieldIndexing indexing = FieldIndexing.Default;
            string? analyzer = null;
            if (element.ValueKind == JsonValueKind.Object && element.TryGetProperty("Analyzer", out var an) && an.ValueKind == JsonValueKind.String && !string.IsNullOrWhiteSpace(an.GetString()))
            {
                analyzer = an.GetString()!;
                if (AnalyzerCatalog.Resolve(analyzer) == null)
                    throw ApiException.IndexCompilation($"Field '{name}': there is no analyzer '{analyzer}' (name a Lucene.Net or Lucene.Net.Analysis.Common analyzer, e.g. StandardAnalyzer, EnglishAnalyzer, WhitespaceAnalyzer).", "Fields", analyzer);
            }
            if (element.ValueKind == JsonValueKind.Object && element.TryGetProperty("Indexing", out var ix) && ix.ValueKind == JsonValueKind.String)
            {
                indexing = ix.GetString() switch
                {
                    "Search" => FieldIndexing.Search,
                    "Exact" => FieldIndexing.Exact,
                    "Default" => FieldIndexing.Default,
                    var other => throw ApiException.IndexCompilation($"Field '{name}': Indexing '{other}' is not supported (use Default, Exact or Search).", "Fields", name),
                };
            }
            // A field with an analyzer is searched with it (RavenDB analyzes such fields); Exact keeps whole values.
            if (analyzer != null && indexing != FieldIndexing.Exact)
            {
                indexing = FieldIndexing.Search;
                analyzers[name] = analyzer;
            }
            options[name] = indexing;
        }
        var spatial = parsed.SelectMany(p => p.Members).Where(m => m.Expr is SpatialExpression).Select(m => m.Name).ToHashSet(StringComparer.Ordinal);
        var miles = new HashSet<string>(StringComparer.Ordinal);
        foreach (var (name, element) in definition.FieldOptions)
        {
            if (element.ValueKind != JsonValueKind.Object || !element.TryGetProperty("Spatial", out var so) || so.ValueKind != JsonValueKind.Object)
                continue;
            if (so.TryGetProperty("Type", out var type) && type.ValueKind == JsonValueKind.String && type.GetString() != "Geography")
                throw ApiException.IndexCompilation($"Field '{name}': spatial Type '{type.GetString()}' is not supported (Geography only).", "Fields", name);
            if (so.TryGetProperty("Units", out var units) && units.ValueKind == JsonValueKind.String && units.GetString() == "Miles")
                miles.Add(name);
        }
        var fieldList = names.Select((n, i) => new IndexField(n, (ushort)i, options.GetValueOrDefault(n), analyzers.GetValueOrDefault(n), spatial.Contains(n), miles.Contains(n))).ToList();
        var byCollection = new Dictionary<string, List<MapExpression>>(StringComparer.OrdinalIgnoreCase);
        foreach (var (collection, members) in parsed)
        {
            if (byCollection.ContainsKey(collection))
                throw ApiException.IndexCompilation($"Index '{definition.Name}' has two maps over '{collection}'; use one.", "Maps", collection);
            // Fields a map does not produce are missing (no values) for its documents.
            byCollection[collection] = fieldList.Select(f => members.FirstOrDefault(m => m.Name == f.Name).Expr ?? MissingExpression.Instance).ToList();
        }
        return new CompiledIndex(parsed.Select(p => p.Collection).ToList(), fieldList, byCollection);
    }

    private sealed class Parser(string text)
    {
        private int _pos;
        private string _variable = "";

        public (string Collection, List<(string Name, MapExpression Expr)> Members) ParseMap()
        {
            Skip();
            string collection;
            List<(string, MapExpression)> members;
            if (TryWord("from"))
            {
                _variable = Identifier();
                Expect("in");
                collection = DocsCollection();
                if (PeekWord() is { } w && w != "select")
                    throw Error($"'{w}' is not supported in a map (only 'select new {{ ... }}')");
                Expect("select");
                Expect("new");
                members = CSharpMembers();
            }
            else if (PeekWord() == "docs")
            {
                collection = DocsCollection();
                Expect(".");
                Expect("Select");
                Expect("(");
                LambdaHead();
                Expect("new");
                members = CSharpMembers();
                Expect(")");
            }
            else if (TryWord("map"))
            {
                Expect("(");
                collection = StringLiteral();
                Expect(",");
                bool block = LambdaHead();
                if (block)
                {
                    Expect("return");
                    members = JsMembers();
                    TryPunct(";");
                    Expect("}");
                }
                else if (TryPunct("("))
                {
                    members = JsMembers();
                    Expect(")");
                }
                else
                {
                    throw Error("a JavaScript map must return an object literal: u => ({ name: u.Name })");
                }
                Expect(")");
            }
            else
            {
                throw Error("expected 'from x in docs.Collection select new { ... }', 'docs.Collection.Select(x => new { ... })' or \"map('Collection', x => ({ ... }))\"");
            }
            TryPunct(";");
            Skip();
            if (_pos < text.Length)
                throw Error("unexpected text after the map");
            if (members.Count == 0)
                throw Error("the map outputs no fields");
            return (collection, members);
        }

        /// <summary>Reads <c>x =&gt;</c>, <c>(x) =&gt;</c>, or <c>function (x) {</c>; true when a block body follows.</summary>
        private bool LambdaHead()
        {
            if (TryWord("function"))
            {
                Expect("(");
                _variable = Identifier();
                Expect(")");
                Expect("{");
                return true;
            }
            bool paren = TryPunct("(");
            _variable = Identifier();
            if (paren)
                Expect(")");
            Expect("=>");
            return TryPunct("{");
        }

        private string DocsCollection()
        {
            Expect("docs");
            if (TryPunct("["))
            {
                string c = StringLiteral();
                Expect("]");
                return c;
            }
            Expect(".");
            return Identifier();
        }

        private List<(string, MapExpression)> CSharpMembers()
        {
            Expect("{");
            var result = new List<(string, MapExpression)>();
            while (!TryPunct("}"))
            {
                int start = _pos;
                string first = Identifier();
                string name;
                MapExpression expr;
                if (TryPunct("=") )
                {
                    name = first;
                    expr = Expression();
                }
                else
                {
                    _pos = start;
                    expr = Expression();
                    name = expr is PathExpression p ? p.Parts[^1] : throw Error("an unnamed member must be a property path like u.Name", start);
                }
                Add(result, name, expr, start);
                if (!TryPunct(","))
                {
                    Expect("}");
                    break;
                }
            }
            return result;
        }

        private List<(string, MapExpression)> JsMembers()
        {
            Expect("{");
            var result = new List<(string, MapExpression)>();
            while (!TryPunct("}"))
            {
                int start = _pos;
                Skip();
                string name = _pos < text.Length && text[_pos] is '\'' or '"' ? StringLiteral() : Identifier();
                Expect(":");
                Add(result, name, Expression(), start);
                if (!TryPunct(","))
                {
                    Expect("}");
                    break;
                }
            }
            return result;
        }

        private void Add(List<(string, MapExpression)> members, string name, MapExpression expr, int position)
        {
            if (members.Any(m => m.Item1 == name))
                throw Error($"field '{name}' is output twice", position);
            members.Add((name, expr));
        }

        private MapExpression Expression()
        {
            var parts = new List<MapExpression> { Primary() };
            while (TryPunct("+"))
                parts.Add(Primary());
            return parts.Count == 1 ? parts[0] : new ConcatExpression(parts);
        }

        private MapExpression Primary()
        {
            Skip();
            if (_pos >= text.Length)
                throw Error("expected a value");
            char c = text[_pos];
            if (c is '\'' or '"')
                return new LiteralExpression(JsonSerializer.SerializeToElement(StringLiteral()));
            if (char.IsDigit(c) || (c == '-' && _pos + 1 < text.Length && char.IsDigit(text[_pos + 1])))
            {
                int start = _pos++;
                while (_pos < text.Length && (char.IsDigit(text[_pos]) || text[_pos] == '.'))
                    _pos++;
                if (!double.TryParse(text.AsSpan(start, _pos - start), NumberStyles.Float, CultureInfo.InvariantCulture, out double d))
                    throw Error("bad number", start);
                return new LiteralExpression(JsonSerializer.SerializeToElement(d));
            }
            if (TryPunct("("))
            {
                var inner = Expression();
                Expect(")");
                return inner;
            }
            int at = _pos;
            string word = Identifier();
            if (word == "this" && TryPunct("."))
                word = Identifier();
            if (word is "CreateSpatialField" or "createSpatialField" && TryPunct("("))
            {
                var args = new List<MapExpression> { Expression() };
                while (TryPunct(","))
                    args.Add(Expression());
                Expect(")");
                if (args.Count > 2)
                    throw Error($"{word}() takes a WKT shape, or a latitude and a longitude", at);
                return new SpatialExpression(args);
            }
            if (word == "null")
                return new LiteralExpression(JsonSerializer.SerializeToElement<object?>(null));
            if (word is "id" or "Id" && TryPunct("("))
            {
                string v = Identifier();
                if (v != _variable)
                    throw Error($"{word}() takes the map's variable '{_variable}'", at);
                Expect(")");
                return IdExpression.Instance;
            }
            if (word != _variable)
                throw Error($"'{word}' is not supported here; values are paths on '{_variable}', string and number literals, id({_variable}) and +", at);
            var path = new List<string>();
            while (TryPunct("?.") || TryPunct("."))
            {
                string part = Identifier();
                if (part is "Select" or "map" && TryPunct("("))
                {
                    // items.Select(i => i.Name) / items.map(i => i.Name): the path continues through the array.
                    bool paren = TryPunct("(");
                    string inner = Identifier();
                    if (paren)
                        Expect(")");
                    Expect("=>");
                    if (Identifier() != inner)
                        throw Error($"the {part} lambda must return a property path of '{inner}'");
                    int before = path.Count;
                    while (TryPunct("?.") || TryPunct("."))
                        path.Add(Identifier());
                    if (path.Count == before)
                        throw Error($"the {part} lambda must return a property path of '{inner}'");
                    Expect(")");
                    continue;
                }
                path.Add(part);
            }
            if (path.Count == 0)
                throw Error($"use a property of '{_variable}', like {_variable}.Name", at);
            Skip();
            if (_pos < text.Length && text[_pos] is '(' or '[')
                throw Error("method calls and indexers are not supported in maps", _pos);
            return new PathExpression(path.ToArray());
        }

        private string StringLiteral()
        {
            Skip();
            if (_pos >= text.Length || text[_pos] is not ('\'' or '"'))
                throw Error("expected a quoted string");
            char quote = text[_pos++];
            var sb = new StringBuilder();
            while (_pos < text.Length && text[_pos] != quote)
            {
                if (text[_pos] == '\\' && _pos + 1 < text.Length)
                    _pos++;
                sb.Append(text[_pos++]);
            }
            if (_pos >= text.Length)
                throw Error("unterminated string");
            _pos++;
            return sb.ToString();
        }

        private string Identifier()
        {
            Skip();
            int start = _pos;
            while (_pos < text.Length && (char.IsLetterOrDigit(text[_pos]) || text[_pos] is '_' or '@' or '$'))
                _pos++;
            if (start == _pos)
                throw Error("expected a name");
            return text[start.._pos];
        }

        private string? PeekWord()
        {
            Skip();
            int p = _pos;
            while (p < text.Length && (char.IsLetterOrDigit(text[p]) || text[p] == '_'))
                p++;
            return p > _pos ? text[_pos..p] : null;
        }

        private bool TryWord(string word)
        {
            if (PeekWord() != word)
                return false;
            _pos += word.Length;
            return true;
        }

        private bool TryPunct(string p)
        {
            Skip();
            if (string.CompareOrdinal(text, _pos, p, 0, p.Length) != 0)
                return false;
            _pos += p.Length;
            return true;
        }

        private void Expect(string token)
        {
            bool ok = char.IsLetter(token[0]) ? TryWord(token) : TryPunct(token);
            if (!ok)
                throw Error($"expected '{token}'");
        }

        private void Skip()
        {
            while (_pos < text.Length && char.IsWhiteSpace(text[_pos]))
                _pos++;
        }

        private ApiException Error(string message, int? at = null)
        {
            int p = Math.Min(at ?? _pos, text.Length);
            string near = text.Substring(p, Math.Min(30, text.Length - p));
            return ApiException.IndexCompilation($"Cannot compile map at position {p} (near '{near}'): {message}.", "Maps", text);
        }
    }
}

/// <summary>A compiled index: its collections, fields, and how each collection's documents map to field values.</summary>
public sealed class CompiledIndex
{
    private readonly Dictionary<string, List<MapExpression>> _maps;
    private readonly Dictionary<string, IndexField> _byName;

    internal CompiledIndex(IReadOnlyList<string> collections, IReadOnlyList<IndexField> fields, Dictionary<string, List<MapExpression>> maps)
    {
        Collections = collections;
        Fields = fields;
        _maps = maps;
        _byName = fields.ToDictionary(f => f.Name, StringComparer.Ordinal);
    }

    /// <summary>Collections read, in definition order.</summary>
    public IReadOnlyList<string> Collections { get; }

    /// <summary>Fields, by id.</summary>
    public IReadOnlyList<IndexField> Fields { get; }

    /// <summary>The field queries call <paramref name="name"/>, or null.</summary>
    public IndexField? Field(string name) => _byName.GetValueOrDefault(name);

    /// <summary>
    /// Maps one document to its entry: a JSON object with, per field that has values, the array of
    /// them (<c>{"Name":["Ann"],"Tags":["a","b"]}</c>). A field with no values is left out.
    /// </summary>
    /// <param name="document">The document.</param>
    /// <param name="collection">Its collection (chooses the map).</param>
    /// <param name="id">Its id.</param>
    /// <param name="fieldValues">When given (one list per field), receives each field's values as well (elements
    /// valid while <paramref name="document"/> is), so the caller need not parse the entry again.</param>
    public byte[] MapEntry(JsonElement document, string collection, string id, List<JsonElement>[]? fieldValues = null)
    {
        var exprs = _maps[collection];
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            var scratch = new List<JsonElement>();
            for (int i = 0; i < exprs.Count; i++)
            {
                var values = fieldValues?[i] ?? scratch;
                values.Clear();
                exprs[i].Evaluate(document, id, values);
                if (values.Count == 0)
                    continue;
                w.WriteStartArray(Fields[i].Name);
                foreach (var v in values)
                    v.WriteTo(w);
                w.WriteEndArray();
            }
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }
}

/// <summary>A value expression of a map.</summary>
internal abstract class MapExpression
{
    public abstract void Evaluate(JsonElement document, string id, List<JsonElement> values);
}

internal sealed class PathExpression(string[] parts) : MapExpression
{
    public string[] Parts { get; } = parts;

    public override void Evaluate(JsonElement document, string id, List<JsonElement> values) => JsonPaths.Walk(document, Parts, 0, values);
}

internal sealed class LiteralExpression(JsonElement value) : MapExpression
{
    public override void Evaluate(JsonElement document, string id, List<JsonElement> values) => values.Add(value);
}

internal sealed class IdExpression : MapExpression
{
    public static readonly IdExpression Instance = new();

    public override void Evaluate(JsonElement document, string id, List<JsonElement> values) => values.Add(JsonSerializer.SerializeToElement(id));
}

internal sealed class MissingExpression : MapExpression
{
    public static readonly MissingExpression Instance = new();

    public override void Evaluate(JsonElement document, string id, List<JsonElement> values)
    {
    }
}

/// <summary>
/// <c>CreateSpatialField(lat, lng)</c> / <c>CreateSpatialField(wkt)</c>: the document's shape as WKT (a point from
/// two numbers; text must parse as a POINT or POLYGON); no value when a coordinate is missing or null; a
/// value that is not a shape fails the document (an index error).
/// </summary>
internal sealed class SpatialExpression(List<MapExpression> args) : MapExpression
{
    public override void Evaluate(JsonElement document, string id, List<JsonElement> values)
    {
        var first = new List<JsonElement>();
        args[0].Evaluate(document, id, first);
        if (args.Count == 1)
        {
            foreach (var v in first)
            {
                if (v.ValueKind == JsonValueKind.Null)
                    continue;
                if (v.ValueKind != JsonValueKind.String || GeoShape.ParseWkt(v.GetString()!) == null)
                    throw new ArgumentException($"CreateSpatialField: {v.GetRawText()} is not a WKT POINT or POLYGON.");
                values.Add(v);
            }
            return;
        }
        var second = new List<JsonElement>();
        args[1].Evaluate(document, id, second);
        if (first.Count == 0 || second.Count == 0 || first[0].ValueKind == JsonValueKind.Null || second[0].ValueKind == JsonValueKind.Null)
            return;
        if (first[0].ValueKind != JsonValueKind.Number || second[0].ValueKind != JsonValueKind.Number
            || GeoPoint.Create(first[0].GetDouble(), second[0].GetDouble()) is not { } point)
            throw new ArgumentException($"CreateSpatialField: ({first[0].GetRawText()}, {second[0].GetRawText()}) is not a latitude and a longitude.");
        values.Add(JsonSerializer.SerializeToElement(point.ToWkt()));
    }
}

/// <summary><c>a + b + ...</c>: the sum when every part is a number, else the concatenated text (null and missing as empty).</summary>
internal sealed class ConcatExpression(List<MapExpression> parts) : MapExpression
{
    public override void Evaluate(JsonElement document, string id, List<JsonElement> values)
    {
        var one = new List<JsonElement>();
        var firsts = new List<JsonElement?>();
        foreach (var p in parts)
        {
            one.Clear();
            p.Evaluate(document, id, one);
            firsts.Add(one.Count > 0 ? one[0] : null);
        }
        if (firsts.All(v => v is { ValueKind: JsonValueKind.Number }))
        {
            values.Add(JsonSerializer.SerializeToElement(firsts.Sum(v => v!.Value.GetDouble())));
            return;
        }
        var sb = new StringBuilder();
        foreach (var v in firsts)
        {
            if (v is not { } e || e.ValueKind is JsonValueKind.Null)
                continue;
            sb.Append(e.ValueKind == JsonValueKind.String ? e.GetString() : e.GetRawText());
        }
        values.Add(JsonSerializer.SerializeToElement(sb.ToString()));
    }
}
