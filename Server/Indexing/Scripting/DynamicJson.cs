using System.Collections;
using System.Dynamic;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>
/// What C# index code sees of JSON (RavenDB's dynamic blittable objects): a property of a document is a
/// <see cref="string"/>, <see cref="long"/> (integral numbers) or <see cref="double"/>, <see cref="bool"/>,
/// a <see cref="DynamicJsonObject"/>, a <see cref="DynamicJsonArray"/>, or <see cref="DynamicNull"/> for
/// null and for a property the document does not have — so <c>o.Missing.Deeper</c> is null, not an exception.
/// </summary>
public static class DynamicJson
{
    /// <summary>
    /// The dynamic view of <paramref name="e"/>. With <paramref name="dates"/> (a time-series item, whose times the
    /// server wrote), strings in the server's date format are <see cref="DateTime"/>s (UTC), as RavenDB hands them to maps.
    /// </summary>
    public static object Wrap(JsonElement e, bool dates = false) => e.ValueKind switch
    {
        JsonValueKind.Object => new DynamicJsonObject(e, dates: dates),
        JsonValueKind.Array => new DynamicJsonArray(e, dates),
        JsonValueKind.String when dates && e.GetString() is { Length: 28 } text && text[^1] == 'Z'
            && DateTime.TryParseExact(text, "yyyy-MM-ddTHH:mm:ss.fffffffZ", CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var time) => time,
        JsonValueKind.String => e.GetString()!,
        JsonValueKind.Number => e.TryGetInt64(out long l) ? l : e.GetDouble(),
        JsonValueKind.True => true,
        JsonValueKind.False => false,
        _ => DynamicNull.Instance,
    };

    /// <summary>True for C# null and <see cref="DynamicNull"/>.</summary>
    public static bool IsNull(object? value) => value is null or DynamicNull;
}

/// <summary>A JSON object: properties by member access (<c>o.Name</c>) or indexer (<c>o["Name"]</c>).</summary>
public sealed class DynamicJsonObject : DynamicObject
{
    internal DynamicJsonObject(JsonElement element, string? id = null, bool dates = false)
    {
        Element = element;
        DocumentId = id;
        _dates = dates;
    }

    private readonly bool _dates;

    internal JsonElement Element { get; }

    /// <summary>The document id when this is a whole document (for <c>Id(o)</c>).</summary>
    internal string? DocumentId { get; }

    /// <summary>A property's value, <see cref="DynamicNull"/> when there is none.</summary>
    public object this[string name] => Element.TryGetProperty(name, out var v) ? DynamicJson.Wrap(v, _dates) : name == "Id" && DocumentId != null ? DocumentId : DynamicNull.Missing;

    public override bool TryGetMember(GetMemberBinder binder, out object? result)
    {
        result = this[binder.Name];
        return true;
    }

    public override bool TryGetIndex(GetIndexBinder binder, object[] indexes, out object? result)
    {
        result = indexes.Length == 1 && indexes[0] is string name ? this[name] : DynamicNull.Missing;
        return true;
    }

    public override bool TryConvert(ConvertBinder binder, out object? result)
    {
        if (binder.Type == typeof(IEnumerable) || binder.Type == typeof(IEnumerable<object>))
        {
            result = Array.Empty<object>();
            return true;
        }
        return base.TryConvert(binder, out result);
    }

    public override IEnumerable<string> GetDynamicMemberNames() => Element.EnumerateObject().Select(p => p.Name).ToList();

    public override string ToString() => Element.GetRawText();

    public override bool Equals(object? obj) => obj is DynamicJsonObject o && o.Element.GetRawText() == Element.GetRawText();

    public override int GetHashCode() => Element.GetRawText().GetHashCode(StringComparison.Ordinal);
}

/// <summary>A JSON array: enumerable, indexable, with <c>Length</c> and <c>Count</c>.</summary>
public sealed class DynamicJsonArray : DynamicObject, IEnumerable<object>
{
    private readonly object[] _items;

    internal DynamicJsonArray(JsonElement element, bool dates = false)
    {
        _items = new object[element.GetArrayLength()];
        int i = 0;
        foreach (var e in element.EnumerateArray())
            _items[i++] = DynamicJson.Wrap(e, dates);
    }

    /// <summary>The number of items.</summary>
    public int Length => _items.Length;

    /// <summary>The number of items.</summary>
    public int Count => _items.Length;

    /// <summary>The item at <paramref name="index"/>, <see cref="DynamicNull"/> outside the array.</summary>
    public object this[int index] => index >= 0 && index < _items.Length ? _items[index] : DynamicNull.Instance;

    public IEnumerator<object> GetEnumerator() => ((IEnumerable<object>)_items).GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => _items.GetEnumerator();

    public override bool TryGetIndex(GetIndexBinder binder, object[] indexes, out object? result)
    {
        result = indexes.Length == 1 && indexes[0] is int i ? this[i] : indexes.Length == 1 && indexes[0] is long l ? this[(int)l] : DynamicNull.Instance;
        return true;
    }

    public override bool TryGetMember(GetMemberBinder binder, out object? result)
    {
        result = binder.Name is "Length" or "Count" ? _items.Length : DynamicNull.Instance;
        return true;
    }

    public override string ToString() => "[" + string.Join(",", _items.Select(i => i is string s ? JsonSerializer.Serialize(s) : Convert.ToString(i, CultureInfo.InvariantCulture))) + "]";

    /// <summary>Equal items in order: two arrays of the same values are one key when a reduce groups by them.</summary>
    public override bool Equals(object? obj) => obj is DynamicJsonArray other && _items.SequenceEqual(other._items);

    public override int GetHashCode()
    {
        var hash = new HashCode();
        foreach (var item in _items)
            hash.Add(item);
        return hash.ToHashCode();
    }
}

/// <summary>
/// Null and missing values: member access and indexing give null again, comparisons with anything but null
/// are false, arithmetic gives null, enumerating gives nothing, and text is empty.
/// </summary>
public sealed class DynamicNull : DynamicObject, IEnumerable<object>
{
    /// <summary>Null.</summary>
    public static readonly DynamicNull Instance = new(false);

    /// <summary>A property the object does not have: null in code, but no value at all in an entry.</summary>
    public static readonly DynamicNull Missing = new(true);

    private DynamicNull(bool missing) => IsMissing = missing;

    /// <summary>True for <see cref="Missing"/>.</summary>
    internal bool IsMissing { get; }

    public override bool TryGetMember(GetMemberBinder binder, out object? result)
    {
        result = this;
        return true;
    }

    public override bool TryGetIndex(GetIndexBinder binder, object[] indexes, out object? result)
    {
        result = this;
        return true;
    }

    public override bool TryInvokeMember(InvokeMemberBinder binder, object?[]? args, out object? result)
    {
        result = this;
        return true;
    }

    public override bool TryBinaryOperation(BinaryOperationBinder binder, object arg, out object? result)
    {
        result = binder.Operation switch
        {
            System.Linq.Expressions.ExpressionType.Equal => DynamicJson.IsNull(arg),
            System.Linq.Expressions.ExpressionType.NotEqual => !DynamicJson.IsNull(arg),
            System.Linq.Expressions.ExpressionType.LessThan or System.Linq.Expressions.ExpressionType.LessThanOrEqual
                or System.Linq.Expressions.ExpressionType.GreaterThan or System.Linq.Expressions.ExpressionType.GreaterThanOrEqual => false,
            System.Linq.Expressions.ExpressionType.AndAlso or System.Linq.Expressions.ExpressionType.And => false,
            System.Linq.Expressions.ExpressionType.OrElse or System.Linq.Expressions.ExpressionType.Or => arg is true,
            System.Linq.Expressions.ExpressionType.Add when arg is string s => s,
            _ => this,
        };
        return true;
    }

    public override bool TryUnaryOperation(UnaryOperationBinder binder, out object? result)
    {
        result = binder.Operation switch
        {
            System.Linq.Expressions.ExpressionType.IsFalse or System.Linq.Expressions.ExpressionType.Not => true,
            System.Linq.Expressions.ExpressionType.IsTrue => false,
            _ => this,
        };
        return true;
    }

    public override bool TryConvert(ConvertBinder binder, out object? result)
    {
        var t = binder.Type;
        if (t == typeof(bool))
            result = false;
        else if (t == typeof(string))
            result = null;
        else if (t.IsValueType)
            result = Nullable.GetUnderlyingType(t) != null ? null : Activator.CreateInstance(t);
        else if (t.IsAssignableFrom(typeof(DynamicNull)))
            result = this;
        else
            result = null;
        return true;
    }

    public static bool operator ==(DynamicNull? a, object? b) => DynamicJson.IsNull(b);

    public static bool operator !=(DynamicNull? a, object? b) => !DynamicJson.IsNull(b);

    public static bool operator ==(object? a, DynamicNull? b) => DynamicJson.IsNull(a);

    public static bool operator !=(object? a, DynamicNull? b) => !DynamicJson.IsNull(a);

    public override bool Equals(object? obj) => DynamicJson.IsNull(obj);

    public override int GetHashCode() => 0;

    public override string ToString() => "";

    public IEnumerator<object> GetEnumerator() => Enumerable.Empty<object>().GetEnumerator();

    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
}
