using System.Collections;
using System.Globalization;
using System.Linq.Expressions;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;

namespace RavenLite.Client.Indexes;

/// <summary>
/// Writes an index map or reduce written as a C# lambda (<c>docs =&gt; from u in docs select new { u.Name }</c>) as the
/// C# text RavenDB servers compile (<c>docs.Users.Select(u =&gt; new { Name = u.Name })</c>), as RavenDB's client does:
/// the lambda's parameter becomes <c>docs.{Collection}</c> for a map and <c>results</c> for a reduce; members take their
/// JSON names under the conventions; LINQ and other static extension methods are written as instance calls; the
/// compiler's transparent identifiers (from <c>let</c> and several <c>from</c>) get valid names.
/// </summary>
internal sealed class IndexExpressionWriter(DocumentConventions conventions, ParameterExpression root, string rootText)
{
    private readonly StringBuilder _sb = new();

    /// <summary>The text of <paramref name="lambda"/>'s body with its parameter written as <paramref name="rootText"/>.</summary>
    public static string Write(LambdaExpression lambda, DocumentConventions conventions, string rootText)
    {
        var writer = new IndexExpressionWriter(conventions, lambda.Parameters[0], rootText);
        writer.Visit(lambda.Body);
        return writer._sb.ToString();
    }

    // Kept whole: one case per expression node kind.
    private void Visit(Expression? e)
    {
        switch (e)
        {
            case null:
                _sb.Append("null");
                break;
            case ParameterExpression p:
                _sb.Append(p == root ? rootText : Name(p.Name));
                break;
            case ConstantExpression c:
                Constant(c.Value);
                break;
            case MemberExpression m:
                Member(m);
                break;
            case MethodCallExpression call:
                Call(call);
                break;
            case NewExpression n:
                New(n);
                break;
            case MemberInitExpression init:
                _sb.Append("new { ");
                for (int i = 0; i < init.Bindings.Count; i++)
                {
                    if (init.Bindings[i] is not MemberAssignment a)
                        throw new NotSupportedException($"Index expressions cannot use {init.Bindings[i].BindingType} bindings.");
                    if (i > 0)
                        _sb.Append(", ");
                    _sb.Append(conventions.JsonName(a.Member)).Append(" = ");
                    Visit(a.Expression);
                }
                _sb.Append(" }");
                break;
            case LambdaExpression l:
                if (l.Parameters.Count == 1)
                    _sb.Append(Name(l.Parameters[0].Name));
                else
                    _sb.Append('(').Append(string.Join(", ", l.Parameters.Select(p => Name(p.Name)))).Append(')');
                _sb.Append(" => ");
                Visit(l.Body);
                break;
            case UnaryExpression u when u.NodeType is ExpressionType.Convert or ExpressionType.ConvertChecked or ExpressionType.TypeAs or ExpressionType.Quote:
                if (u.NodeType == ExpressionType.Convert && IsNumeric(u.Type) && IsNumeric(u.Operand.Type) && Nullable.GetUnderlyingType(u.Type) == null)
                {
                    _sb.Append('(').Append(CSharpName(u.Type)).Append(')');
                    Visit(u.Operand);
                }
                else
                {
                    Visit(u.Operand); // documents are dynamic on the server: reference and nullable conversions vanish
                }
                break;
            case UnaryExpression u when u.NodeType == ExpressionType.Not:
                _sb.Append("!(");
                Visit(u.Operand);
                _sb.Append(')');
                break;
            case UnaryExpression u when u.NodeType is ExpressionType.Negate or ExpressionType.NegateChecked:
                _sb.Append("-(");
                Visit(u.Operand);
                _sb.Append(')');
                break;
            case UnaryExpression u when u.NodeType == ExpressionType.ArrayLength:
                Visit(u.Operand);
                _sb.Append(".Length");
                break;
            case BinaryExpression b when b.NodeType == ExpressionType.ArrayIndex:
                Visit(b.Left);
                _sb.Append('[');
                Visit(b.Right);
                _sb.Append(']');
                break;
            case BinaryExpression b:
                _sb.Append('(');
                Visit(b.Left);
                _sb.Append(' ').Append(Operator(b.NodeType)).Append(' ');
                Visit(b.Right);
                _sb.Append(')');
                break;
            case ConditionalExpression c:
                _sb.Append('(');
                Visit(c.Test);
                _sb.Append(" ? ");
                Visit(c.IfTrue);
                _sb.Append(" : ");
                Visit(c.IfFalse);
                _sb.Append(')');
                break;
            case NewArrayExpression a:
                _sb.Append("new[] { ");
                for (int i = 0; i < a.Expressions.Count; i++)
                {
                    if (i > 0)
                        _sb.Append(", ");
                    Visit(a.Expressions[i]);
                }
                _sb.Append(" }");
                break;
            default:
                throw new NotSupportedException($"Index expressions cannot use {e.NodeType} ({e}).");
        }
    }

    private void Member(MemberExpression m)
    {
        if (m.Expression == null)
        {
            // A static member (DateTime.Now, string.Empty): written with its type.
            _sb.Append(CSharpName(m.Member.DeclaringType!)).Append('.').Append(m.Member.Name);
            return;
        }
        if (m.Expression is ConstantExpression closure)
        {
            // A captured local: its value now.
            Constant(m.Member is FieldInfo f ? f.GetValue(closure.Value) : ((PropertyInfo)m.Member).GetValue(closure.Value));
            return;
        }
        if (Nullable.GetUnderlyingType(m.Expression.Type) != null)
        {
            Visit(m.Expression);
            if (m.Member.Name == "HasValue")
                _sb.Append(" != null");
            return; // .Value
        }
        Visit(m.Expression);
        bool generated = m.Member.DeclaringType?.IsDefined(typeof(CompilerGeneratedAttribute), false) == true;
        bool grouping = m.Member.DeclaringType is { IsGenericType: true } dt && dt.GetGenericTypeDefinition() == typeof(IGrouping<,>);
        _sb.Append('.').Append(generated || grouping || m.Member.Name is "Length" or "Count" ? Name(m.Member.Name) : conventions.JsonName(m.Member));
    }

    private void Call(MethodCallExpression call)
    {
        var method = call.Method;
        if (method.DeclaringType == typeof(string) && method.Name == "Concat" && call.Arguments.All(a => a.Type != typeof(object[])))
        {
            _sb.Append('(');
            for (int i = 0; i < call.Arguments.Count; i++)
            {
                if (i > 0)
                    _sb.Append(" + ");
                Visit(call.Arguments[i]);
            }
            _sb.Append(')');
            return;
        }
        if (method.DeclaringType != null && typeof(AbstractIndexCreationTaskBase).IsAssignableFrom(method.DeclaringType))
        {
            // LoadDocument<T>(id), MetadataFor(doc), AsJson(doc), Recurse(x, f), CreateSpatialField(...): server functions.
            _sb.Append(method.Name);
            Arguments(call.Arguments, 0);
            if (method.Name == "LoadDocument" && method.IsGenericMethod && call.Arguments.Count == 1)
                _sb.Insert(_sb.Length - 1, ", " + Literal(conventions.FindCollectionName(method.GetGenericArguments()[0])));
            return;
        }
        if (method.IsDefined(typeof(ExtensionAttribute), false))
        {
            Visit(call.Arguments[0]);
            _sb.Append('.').Append(method.Name);
            Arguments(call.Arguments, 1);
            return;
        }
        if (method.IsStatic)
        {
            _sb.Append(CSharpName(method.DeclaringType!)).Append('.').Append(method.Name);
            Arguments(call.Arguments, 0);
            return;
        }
        if (method.Name == "get_Item")
        {
            Visit(call.Object);
            _sb.Append('[');
            for (int i = 0; i < call.Arguments.Count; i++)
                Visit(call.Arguments[i]);
            _sb.Append(']');
            return;
        }
        Visit(call.Object);
        _sb.Append('.').Append(method.Name);
        Arguments(call.Arguments, 0);
    }

    private void Arguments(System.Collections.ObjectModel.ReadOnlyCollection<Expression> args, int from)
    {
        _sb.Append('(');
        for (int i = from; i < args.Count; i++)
        {
            if (i > from)
                _sb.Append(", ");
            Visit(args[i]);
        }
        _sb.Append(')');
    }

    private void New(NewExpression n)
    {
        if (n.Members == null)
            throw new NotSupportedException($"Index expressions create anonymous objects (new {{ ... }}), not {n.Type.Name}.");
        _sb.Append("new { ");
        for (int i = 0; i < n.Members.Count; i++)
        {
            if (i > 0)
                _sb.Append(", ");
            bool anonymous = n.Type.IsDefined(typeof(CompilerGeneratedAttribute), false);
            _sb.Append(anonymous ? Name(n.Members[i].Name) : conventions.JsonName(n.Members[i])).Append(" = ");
            Visit(n.Arguments[i]);
        }
        _sb.Append(" }");
    }

    private void Constant(object? value)
    {
        switch (value)
        {
            case null:
                _sb.Append("null");
                break;
            case string s:
                _sb.Append(Literal(s));
                break;
            case bool b:
                _sb.Append(b ? "true" : "false");
                break;
            case char ch:
                _sb.Append(Literal(ch.ToString())).Append("[0]");
                break;
            case Enum en:
                _sb.Append(Literal(en.ToString()));
                break;
            case double d:
                _sb.Append(d.ToString("R", CultureInfo.InvariantCulture)).Append('D');
                break;
            case float f:
                _sb.Append(f.ToString("R", CultureInfo.InvariantCulture)).Append('F');
                break;
            case decimal m:
                _sb.Append(m.ToString(CultureInfo.InvariantCulture)).Append('M');
                break;
            case long l:
                _sb.Append(l.ToString(CultureInfo.InvariantCulture)).Append('L');
                break;
            case IConvertible c when IsNumeric(value.GetType()):
                _sb.Append(c.ToString(CultureInfo.InvariantCulture));
                break;
            case DateTime dt:
                _sb.Append("DateTime.Parse(").Append(Literal(dt.ToString("o", CultureInfo.InvariantCulture))).Append(", CultureInfo.InvariantCulture, DateTimeStyles.RoundtripKind)");
                break;
            case IEnumerable items:
                _sb.Append("new object[] { ");
                bool first = true;
                foreach (var item in items)
                {
                    if (!first)
                        _sb.Append(", ");
                    first = false;
                    Constant(item);
                }
                _sb.Append(" }");
                break;
            default:
                throw new NotSupportedException($"Index expressions cannot hold a constant {value.GetType().Name}.");
        }
    }

    private static string Literal(string s) => JsonSerializer.Serialize(s, IndexJson.Options);

    /// <summary>A valid C# name for a compiler-made one (<c>&lt;&gt;h__TransparentIdentifier0</c> → <c>__h__TransparentIdentifier0</c>).</summary>
    private static string Name(string? name)
    {
        if (string.IsNullOrEmpty(name))
            return "__p";
        var sb = new StringBuilder(name.Length);
        foreach (char c in name)
            sb.Append(char.IsLetterOrDigit(c) || c == '_' ? c : '_');
        return sb.ToString();
    }

    private static bool IsNumeric(Type t)
    {
        t = Nullable.GetUnderlyingType(t) ?? t;
        return t == typeof(int) || t == typeof(long) || t == typeof(double) || t == typeof(float) || t == typeof(decimal) || t == typeof(short) || t == typeof(byte) || t == typeof(uint) || t == typeof(ulong);
    }

    private static string CSharpName(Type t) => t switch
    {
        _ when t == typeof(int) => "int",
        _ when t == typeof(long) => "long",
        _ when t == typeof(double) => "double",
        _ when t == typeof(float) => "float",
        _ when t == typeof(decimal) => "decimal",
        _ when t == typeof(short) => "short",
        _ when t == typeof(byte) => "byte",
        _ when t == typeof(uint) => "uint",
        _ when t == typeof(ulong) => "ulong",
        _ when t == typeof(string) => "string",
        _ => t.Name,
    };

    private static string Operator(ExpressionType t) => t switch
    {
        ExpressionType.Add or ExpressionType.AddChecked => "+",
        ExpressionType.Subtract or ExpressionType.SubtractChecked => "-",
        ExpressionType.Multiply or ExpressionType.MultiplyChecked => "*",
        ExpressionType.Divide => "/",
        ExpressionType.Modulo => "%",
        ExpressionType.Equal => "==",
        ExpressionType.NotEqual => "!=",
        ExpressionType.LessThan => "<",
        ExpressionType.LessThanOrEqual => "<=",
        ExpressionType.GreaterThan => ">",
        ExpressionType.GreaterThanOrEqual => ">=",
        ExpressionType.AndAlso => "&&",
        ExpressionType.OrElse => "||",
        ExpressionType.And => "&",
        ExpressionType.Or => "|",
        ExpressionType.ExclusiveOr => "^",
        ExpressionType.Coalesce => "??",
        _ => throw new NotSupportedException($"Index expressions cannot use the operator {t}."),
    };
}

/// <summary>JSON string literals that are valid C# literals (no HTML escaping).</summary>
internal static class IndexJson
{
    public static readonly JsonSerializerOptions Options = new() { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping };
}
