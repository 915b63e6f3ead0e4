using System.Collections;
using System.Globalization;
using System.Linq.Expressions;
using System.Reflection;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace RavenLite.Client.Linq;

/// <summary>
/// Translates a LINQ expression tree into RQL text plus parameters (docs/protocol.md §6 shapes):
/// <c>from 'Users' where Age &gt; $p0 and startsWith(Name, $p1) order by Age as long desc select Name limit $p2, $p3</c>.
/// Supported: Where (==, !=, &lt;, &lt;=, &gt;, &gt;=, &amp;&amp;, ||, !, bool members, StartsWith,
/// <see cref="RavenLinqExtensions.In{T}(T, IEnumerable{T})"/>, Enumerable.Contains,
/// <see cref="RavenLinqExtensions.Search"/>), OrderBy/ThenBy(Descending), Skip/Take, Select (a
/// member or <c>new { .. }</c>), Distinct, and the terminal Count/LongCount/Any/First/FirstOrDefault/
/// Single/SingleOrDefault. Anything else throws <see cref="NotSupportedException"/> naming the expression.
/// Values are never inlined: every constant becomes a <c>$pN</c> parameter.
/// </summary>
internal sealed class RqlTranslator
{
    private readonly DocumentConventions _conventions;
    private readonly List<string> _where = [];
    private readonly List<string> _orderBy = [];
    private readonly List<string> _select = [];
    private readonly JsonObject _parameters = [];
    private int? _skip, _take;
    private bool _distinct;

    private RqlTranslator(DocumentConventions conventions) => _conventions = conventions;

    /// <summary>Translates <paramref name="expression"/> over the query root.</summary>
    public static RqlQuery Translate(Expression expression, string? indexName, string? collection, DocumentConventions conventions)
    {
        var t = new RqlTranslator(conventions);
        var terminal = t.Visit(expression);
        return t.Build(indexName, collection, terminal);
    }

    private RqlQuery Build(string? indexName, string? collection, TerminalOperation terminal)
    {
        var sb = new StringBuilder();
        if (indexName != null)
            sb.Append("from index '").Append(Escape(indexName)).Append('\'');
        else
            sb.Append("from '").Append(Escape(collection ?? throw new InvalidOperationException("A query needs a collection or an index."))).Append('\'');
        if (_where.Count > 0)
            sb.Append(" where ").Append(string.Join(" and ", _where));
        if (_orderBy.Count > 0)
            sb.Append(" order by ").Append(string.Join(", ", _orderBy));
        if (_select.Count > 0)
            sb.Append(" select ").Append(_distinct ? "distinct " : "").Append(string.Join(", ", _select));
        int? take = terminal switch
        {
            TerminalOperation.Count or TerminalOperation.Any => 0,
            TerminalOperation.First => Math.Min(_take ?? 1, 1),
            TerminalOperation.Single => Math.Min(_take ?? 2, 2),
            _ => _take,
        };
        if (_skip != null || take != null)
        {
            string s = AddParameter(_skip ?? 0);
            string tk = AddParameter(take ?? int.MaxValue);
            sb.Append(" limit ").Append(s).Append(", ").Append(tk);
        }
        return new RqlQuery(sb.ToString(), _parameters, terminal, _select.Count > 0);
    }

    private static string Escape(string name) => name.Replace("'", "\\'", StringComparison.Ordinal);

    /// <summary>Walks the method chain from the outermost call inwards; returns the terminal operation.</summary>
    private TerminalOperation Visit(Expression expression)
    {
        if (expression is ConstantExpression { Value: IQueryable })
            return TerminalOperation.None;
        if (expression is not MethodCallExpression call || (call.Method.DeclaringType != typeof(Queryable) && call.Method.DeclaringType != typeof(RavenQueryableExtensions)))
            throw new NotSupportedException($"RavenLite LINQ does not support '{expression}'.");
        var terminal = call.Method.Name switch
        {
            "Count" or "LongCount" => TerminalOperation.Count,
            "Any" => TerminalOperation.Any,
            "First" or "FirstOrDefault" => TerminalOperation.First,
            "Single" or "SingleOrDefault" => TerminalOperation.Single,
            _ => TerminalOperation.None,
        };
        if (terminal != TerminalOperation.None)
        {
            Visit(call.Arguments[0]);
            if (call.Arguments.Count == 2)
                _where.Add(Predicate(Lambda(call.Arguments[1]).Body));
            return terminal;
        }
        Visit(call.Arguments[0]);
        switch (call.Method.Name)
        {
            case "Where":
                if (_select.Count > 0)
                    throw new NotSupportedException($"Where after Select is not supported: '{call}'. Filter before projecting.");
                _where.Add(Predicate(Lambda(call.Arguments[1]).Body));
                break;
            case "OrderBy" or "ThenBy" or "OrderByDescending" or "ThenByDescending":
                var key = Lambda(call.Arguments[1]).Body;
                string order = FieldOf(key) + OrderingType(key.Type);
                _orderBy.Add(call.Method.Name.EndsWith("Descending", StringComparison.Ordinal) ? order + " desc" : order);
                break;
            case "Skip":
                _skip = (_skip ?? 0) + (int)Evaluate(call.Arguments[1])!;
                if (_take is { } t0)
                    _take = Math.Max(0, t0 - (int)Evaluate(call.Arguments[1])!);
                break;
            case "Take":
                int take = (int)Evaluate(call.Arguments[1])!;
                _take = _take is { } t1 ? Math.Min(t1, take) : take;
                break;
            case "Select":
                Projection(Lambda(call.Arguments[1]).Body);
                break;
            case "Distinct":
                _distinct = true;
                break;
            default:
                throw new NotSupportedException($"RavenLite LINQ does not support the operator {call.Method.Name}: '{call}'.");
        }
        return TerminalOperation.None;
    }

    private static LambdaExpression Lambda(Expression e) => (LambdaExpression)StripQuotes(e);

    private static Expression StripQuotes(Expression e)
    {
        while (e.NodeType == ExpressionType.Quote)
            e = ((UnaryExpression)e).Operand;
        return e;
    }

    private void Projection(Expression body)
    {
        switch (body)
        {
            case NewExpression n when n.Members != null:
                for (int i = 0; i < n.Arguments.Count; i++)
                    AddSelect(n.Arguments[i], _conventions.JsonName(n.Members[i]));
                break;
            case MemberInitExpression mi when mi.NewExpression.Arguments.Count == 0:
                foreach (var b in mi.Bindings)
                {
                    if (b is not MemberAssignment a)
                        throw new NotSupportedException($"Projection binding '{b}' is not supported.");
                    AddSelect(a.Expression, _conventions.JsonName(a.Member));
                }
                break;
            case MemberExpression m:
                _select.Add(FieldOf(m));
                break;
            default:
                throw new NotSupportedException($"Projection '{body}' is not supported: select a member or new {{ ... }} of members.");
        }
    }

    private void AddSelect(Expression value, string alias)
    {
        string field = FieldOf(value);
        _select.Add(field == alias ? field : $"{field} as {alias}");
    }

    /// <summary>A boolean condition.</summary>
    private string Predicate(Expression e)
    {
        switch (e)
        {
            case BinaryExpression { NodeType: ExpressionType.AndAlso } b:
                return $"({Predicate(b.Left)} and {Predicate(b.Right)})";
            case BinaryExpression { NodeType: ExpressionType.OrElse } b:
                return $"({Predicate(b.Left)} or {Predicate(b.Right)})";
            case BinaryExpression b when Comparison(b.NodeType) != null:
                return Compare(b);
            case UnaryExpression { NodeType: ExpressionType.Not } u:
                if (StripConvert(u.Operand) is BinaryExpression nb && Negate(nb.NodeType) is { } neg)
                    return Compare(Expression.MakeBinary(neg, nb.Left, nb.Right));
                if (StripConvert(u.Operand) is MemberExpression nm && nm.Type == typeof(bool) && DependsOnParameter(nm))
                    return $"{FieldOf(nm)} = {AddParameter(false)}";
                return $"(true and not {Predicate(u.Operand)})";
            case MemberExpression m when m.Type == typeof(bool) && DependsOnParameter(m):
                return $"{FieldOf(m)} = {AddParameter(true)}";
            case MethodCallExpression call:
                return Method(call);
            default:
                throw new NotSupportedException($"RavenLite LINQ cannot translate the condition '{e}'.");
        }
    }

    private string Method(MethodCallExpression call)
    {
        var m = call.Method;
        if (m.DeclaringType == typeof(string) && m.Name == "StartsWith" && call.Object != null && call.Arguments.Count == 1)
            return $"startsWith({FieldOf(call.Object)}, {AddParameter(Evaluate(call.Arguments[0]))})";
        if (m.DeclaringType == typeof(string) && m.Name == "Equals" && call.Object != null && call.Arguments.Count == 1)
            return $"{FieldOf(call.Object)} = {AddParameter(Evaluate(call.Arguments[0]))}";
        if (m.DeclaringType == typeof(RavenLinqExtensions) && m.Name == nameof(RavenLinqExtensions.In))
            return $"{FieldOf(call.Arguments[0])} in ({AddParameter(Evaluate(call.Arguments[1]))})";
        if (m.DeclaringType == typeof(RavenLinqExtensions) && m.Name == nameof(RavenLinqExtensions.Search))
            return $"search({FieldOf(call.Arguments[0])}, {AddParameter(Evaluate(call.Arguments[1]))})";
        if (m.Name == "Contains" && (m.DeclaringType == typeof(Enumerable) || m.DeclaringType == typeof(MemoryExtensions)) && call.Arguments.Count == 2 && !DependsOnParameter(call.Arguments[0]))
            return $"{FieldOf(call.Arguments[1])} in ({AddParameter(Evaluate(UnwrapSpan(call.Arguments[0])))})";
        if (m.Name == "Contains" && call.Object != null && !DependsOnParameter(call.Object) && call.Arguments.Count == 1 && typeof(IEnumerable).IsAssignableFrom(call.Object.Type) && call.Object.Type != typeof(string))
            return $"{FieldOf(call.Arguments[0])} in ({AddParameter(Evaluate(call.Object))})";
        throw new NotSupportedException($"RavenLite LINQ cannot translate the method call '{call}'.");
    }

    private string Compare(BinaryExpression b)
    {
        var left = StripConvert(b.Left);
        var right = StripConvert(b.Right);
        var op = b.NodeType;
        if (!DependsOnParameter(left) && DependsOnParameter(right))
        {
            (left, right) = (right, left);
            op = Flip(op);
        }
        if (!DependsOnParameter(left) || DependsOnParameter(right))
            throw new NotSupportedException($"RavenLite LINQ compares a document field with a value; '{b}' does not.");
        return $"{FieldOf(left)} {Comparison(op)} {AddParameter(Evaluate(right))}";
    }

    private static string? Comparison(ExpressionType t) => t switch
    {
        ExpressionType.Equal => "=",
        ExpressionType.NotEqual => "!=",
        ExpressionType.LessThan => "<",
        ExpressionType.LessThanOrEqual => "<=",
        ExpressionType.GreaterThan => ">",
        ExpressionType.GreaterThanOrEqual => ">=",
        _ => null,
    };

    private static ExpressionType? Negate(ExpressionType t) => t switch
    {
        ExpressionType.Equal => ExpressionType.NotEqual,
        ExpressionType.NotEqual => ExpressionType.Equal,
        ExpressionType.LessThan => ExpressionType.GreaterThanOrEqual,
        ExpressionType.LessThanOrEqual => ExpressionType.GreaterThan,
        ExpressionType.GreaterThan => ExpressionType.LessThanOrEqual,
        ExpressionType.GreaterThanOrEqual => ExpressionType.LessThan,
        _ => null,
    };

    private static ExpressionType Flip(ExpressionType t) => t switch
    {
        ExpressionType.LessThan => ExpressionType.GreaterThan,
        ExpressionType.LessThanOrEqual => ExpressionType.GreaterThanOrEqual,
        ExpressionType.GreaterThan => ExpressionType.LessThan,
        ExpressionType.GreaterThanOrEqual => ExpressionType.LessThanOrEqual,
        _ => t,
    };

    /// <summary><c>array.Contains(x)</c> binds to MemoryExtensions over an implicit array→span conversion (C# 14); the values are the array.</summary>
    private static Expression UnwrapSpan(Expression e) =>
        e is MethodCallExpression { Method.Name: "op_Implicit", Arguments.Count: 1 } conv ? conv.Arguments[0] : e;

    private static Expression StripConvert(Expression e)
    {
        while (e is UnaryExpression { NodeType: ExpressionType.Convert or ExpressionType.ConvertChecked } u)
            e = u.Operand;
        return e;
    }

    /// <summary>The RQL field path of a member chain on the lambda parameter (<c>Address.City</c>; the identity property is <c>id()</c>).</summary>
    private string FieldOf(Expression e)
    {
        e = StripConvert(e);
        var parts = new List<string>();
        while (e is MemberExpression m)
        {
            var owner = m.Expression?.Type;
            if (owner != null && (owner == typeof(string) || owner.IsPrimitive || owner.IsArray || (owner.IsGenericType && typeof(IEnumerable).IsAssignableFrom(owner))))
                throw new NotSupportedException($"'{m}' reads a property of a value ({owner.Name}.{m.Member.Name}); RavenLite LINQ compares stored fields only.");
            parts.Add(_conventions.JsonName(m.Member));
            e = StripConvert(m.Expression!);
        }
        if (e is not ParameterExpression p || parts.Count == 0)
            throw new NotSupportedException($"'{e}' is not a document field: use members of the query's element (x => x.Name).");
        parts.Reverse();
        if (parts.Count == 1 && _conventions.IdentityProperty(p.Type) is { } idProp && _conventions.JsonName(idProp) == parts[0])
            return "id()";
        return string.Join('.', parts.Select(QuoteIfNeeded));
    }

    private static string QuoteIfNeeded(string name) =>
        name.All(c => char.IsLetterOrDigit(c) || c == '_') && !char.IsDigit(name[0]) ? name : "'" + Escape(name) + "'";

    private static string OrderingType(Type t)
    {
        t = Nullable.GetUnderlyingType(t) ?? t;
        if (t == typeof(int) || t == typeof(long) || t == typeof(short) || t == typeof(byte) || t == typeof(uint) || t == typeof(ulong) || t == typeof(ushort) || t == typeof(sbyte))
            return " as long";
        if (t == typeof(double) || t == typeof(float) || t == typeof(decimal))
            return " as double";
        return "";
    }

    private static bool DependsOnParameter(Expression e) => new ParameterFinder().Finds(e);

    /// <summary>Evaluates a sub-expression that does not involve the document (a constant or captured variable).</summary>
    private static object? Evaluate(Expression e)
    {
        e = StripConvert(e);
        switch (e)
        {
            case ConstantExpression c:
                return c.Value;
            case MemberExpression { Expression: ConstantExpression owner } m:
                return m.Member switch
                {
                    FieldInfo f => f.GetValue(owner.Value),
                    PropertyInfo p => p.GetValue(owner.Value),
                    _ => Expression.Lambda(e).Compile().DynamicInvoke(),
                };
            default:
                return Expression.Lambda(e).Compile().DynamicInvoke();
        }
    }

    private string AddParameter(object? value)
    {
        string name = "p" + _parameters.Count.ToString(CultureInfo.InvariantCulture);
        _parameters[name] = value == null ? null : JsonSerializer.SerializeToNode(value, value.GetType(), _conventions.JsonSerializerOptions);
        return "$" + name;
    }

    private sealed class ParameterFinder : ExpressionVisitor
    {
        private bool _found;

        public bool Finds(Expression e)
        {
            Visit(e);
            return _found;
        }

        protected override Expression VisitParameter(ParameterExpression node)
        {
            _found = true;
            return node;
        }
    }
}

/// <summary>What a LINQ query turns into.</summary>
/// <param name="Rql">The RQL text.</param>
/// <param name="Parameters">Values of <c>$pN</c>.</param>
/// <param name="Terminal">The terminal operator, if any.</param>
/// <param name="IsProjection">True when the query selects fields.</param>
internal sealed record RqlQuery(string Rql, JsonObject Parameters, TerminalOperation Terminal, bool IsProjection);

/// <summary>How a query's answer is reduced.</summary>
internal enum TerminalOperation
{
    None,
    Count,
    Any,
    First,
    Single,
}
