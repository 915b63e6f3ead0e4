using System.Collections;

namespace RavenLite.Server.Indexing.Scripting;

/// <summary>
/// LINQ over dynamic values for C# index code. C# cannot pass a lambda to a call on a <c>dynamic</c> receiver
/// nor query a <c>dynamic</c> source, so the compiler (<see cref="CSharpIndexCompiler"/>) rewrites
/// <c>o.Lines.Select(l =&gt; l.Product)</c> to <c>DynamicLinq.Select((object)o.Lines, l =&gt; l.Product)</c> and
/// <c>from l in o.Lines</c> to <c>from l in DynamicLinq.Enumerate((object)o.Lines)</c>. A source that is null or
/// missing is empty; one that is not a sequence is a sequence of itself. Sum, Average, Min and Max over dynamic
/// values add longs as longs and anything else as doubles, skipping nulls.
/// </summary>
public static class DynamicLinq
{
    /// <summary>The methods the compiler rewrites (by name).</summary>
    internal static readonly HashSet<string> Names =
    [
        "Select", "SelectMany", "Where", "Any", "All", "Count", "LongCount", "Sum", "Average", "Min", "Max", "First", "FirstOrDefault",
        "Last", "LastOrDefault", "Single", "SingleOrDefault", "OrderBy", "OrderByDescending", "ThenBy", "ThenByDescending", "GroupBy",
        "Distinct", "Take", "Skip", "ToList", "ToArray", "Contains", "Concat", "Reverse", "DefaultIfEmpty", "ElementAt",
        "ElementAtOrDefault", "Aggregate", "TakeWhile", "SkipWhile", "Union", "Intersect", "Except", "Zip", "ToDictionary",
    ];

    // Kept whole: one switch arm per kind of value a dynamic index expression can enumerate.
    /// <summary>The items of <paramref name="source"/> as a sequence.</summary>
    public static IEnumerable<dynamic> Enumerate(object? source) => source switch
    {
        null or DynamicNull => [],
        string s => [s],
        DynamicJsonObject o => [o],
        IEnumerable<object> e => e,
        IEnumerable e => e.Cast<object>(),
        _ => [source],
    };

    public static IEnumerable<TResult> Select<TResult>(object? source, Func<dynamic, TResult> selector) => Enumerate(source).Select(selector);

    public static IEnumerable<TResult> Select<TResult>(object? source, Func<dynamic, int, TResult> selector) => Enumerate(source).Select(selector);

    public static IEnumerable<dynamic> SelectMany(object? source, Func<dynamic, object> selector) => Enumerate(source).SelectMany<object, object>((object x) => Enumerate(selector(x)));

    public static IEnumerable<TResult> SelectMany<TResult>(object? source, Func<dynamic, object> selector, Func<dynamic, dynamic, TResult> result) =>
        Enumerate(source).SelectMany<object, object, TResult>((object x) => Enumerate(selector(x)), (object x, object y) => result(x, y));

    public static IEnumerable<dynamic> Where(object? source, Func<dynamic, bool> predicate) => Enumerate(source).Where(predicate);

    public static bool Any(object? source) => Enumerate(source).Any();

    public static bool Any(object? source, Func<dynamic, bool> predicate) => Enumerate(source).Any(predicate);

    public static bool All(object? source, Func<dynamic, bool> predicate) => Enumerate(source).All(predicate);

    public static int Count(object? source) => source is string s ? s.Length : Enumerate(source).Count();

    public static int Count(object? source, Func<dynamic, bool> predicate) => Enumerate(source).Count(predicate);

    public static long LongCount(object? source) => Enumerate(source).LongCount();

    public static dynamic Sum(object? source) => Add(Enumerate(source));

    public static dynamic Sum(object? source, Func<dynamic, object> selector) => Add(Enumerate(source).Select(x => (object)selector(x)));

    public static dynamic Average(object? source) => (object?)Mean(Enumerate(source)) ?? DynamicNull.Instance;

    public static dynamic Average(object? source, Func<dynamic, object> selector) => (object?)Mean(Enumerate(source).Select(x => (object)selector(x))) ?? DynamicNull.Instance;

    public static dynamic Min(object? source) => Extreme(Enumerate(source), -1);

    public static dynamic Min(object? source, Func<dynamic, object> selector) => Extreme(Enumerate(source).Select(x => (object)selector(x)), -1);

    public static dynamic Max(object? source) => Extreme(Enumerate(source), 1);

    public static dynamic Max(object? source, Func<dynamic, object> selector) => Extreme(Enumerate(source).Select(x => (object)selector(x)), 1);

    public static dynamic First(object? source) => Enumerate(source).First();

    public static dynamic First(object? source, Func<dynamic, bool> predicate) => Enumerate(source).First(predicate);

    public static dynamic FirstOrDefault(object? source) => Enumerate(source).FirstOrDefault() ?? DynamicNull.Instance;

    public static dynamic FirstOrDefault(object? source, Func<dynamic, bool> predicate) => Enumerate(source).FirstOrDefault(predicate) ?? DynamicNull.Instance;

    public static dynamic Last(object? source) => Enumerate(source).Last();

    public static dynamic Last(object? source, Func<dynamic, bool> predicate) => Enumerate(source).Last(predicate);

    public static dynamic LastOrDefault(object? source) => Enumerate(source).LastOrDefault() ?? DynamicNull.Instance;

    public static dynamic LastOrDefault(object? source, Func<dynamic, bool> predicate) => Enumerate(source).LastOrDefault(predicate) ?? DynamicNull.Instance;

    public static dynamic Single(object? source) => Enumerate(source).Single();

    public static dynamic Single(object? source, Func<dynamic, bool> predicate) => Enumerate(source).Single(predicate);

    public static dynamic SingleOrDefault(object? source) => Enumerate(source).SingleOrDefault() ?? DynamicNull.Instance;

    public static dynamic SingleOrDefault(object? source, Func<dynamic, bool> predicate) => Enumerate(source).SingleOrDefault(predicate) ?? DynamicNull.Instance;

    public static IOrderedEnumerable<dynamic> OrderBy(object? source, Func<dynamic, object> key) => Enumerate(source).OrderBy(k => (object)key(k), ValueComparer.Instance);

    public static IOrderedEnumerable<dynamic> OrderByDescending(object? source, Func<dynamic, object> key) => Enumerate(source).OrderByDescending(k => (object)key(k), ValueComparer.Instance);

    public static IOrderedEnumerable<dynamic> ThenBy(object? source, Func<dynamic, object> key) => Ordered(source).ThenBy(k => (object)key(k), ValueComparer.Instance);

    public static IOrderedEnumerable<dynamic> ThenByDescending(object? source, Func<dynamic, object> key) => Ordered(source).ThenByDescending(k => (object)key(k), ValueComparer.Instance);

    public static IEnumerable<IGrouping<dynamic, dynamic>> GroupBy(object? source, Func<dynamic, object> key) =>
        Enumerate(source).GroupBy<object, object>((object k) => key(k), ValueComparer.Instance!);

    public static IEnumerable<dynamic> Distinct(object? source) => Enumerate(source).Distinct<object>(ValueComparer.Instance!);

    public static IEnumerable<dynamic> Take(object? source, int count) => Enumerate(source).Take(count);

    public static IEnumerable<dynamic> Skip(object? source, int count) => Enumerate(source).Skip(count);

    public static IEnumerable<dynamic> TakeWhile(object? source, Func<dynamic, bool> predicate) => Enumerate(source).TakeWhile(predicate);

    public static IEnumerable<dynamic> SkipWhile(object? source, Func<dynamic, bool> predicate) => Enumerate(source).SkipWhile(predicate);

    public static List<dynamic> ToList(object? source) => Enumerate(source).ToList();

    public static dynamic[] ToArray(object? source) => Enumerate(source).ToArray();

    public static Dictionary<object, dynamic> ToDictionary(object? source, Func<dynamic, object> key, Func<dynamic, object> value) =>
        Enumerate(source).ToDictionary<object, object, dynamic>((object k) => key(k), (object v) => value(v), ValueComparer.Instance!);

    /// <summary>A string contains text; a sequence contains a value.</summary>
    public static bool Contains(object? source, object? value) => source is string s
        ? value is not null and not DynamicNull && s.Contains(Convert.ToString(value, CultureInfo.InvariantCulture)!, StringComparison.Ordinal)
        : Enumerate(source).Contains<object>(value!, ValueComparer.Instance!);

    public static IEnumerable<dynamic> Concat(object? source, object? other) => Enumerate(source).Concat(Enumerate(other));

    public static IEnumerable<dynamic> Union(object? source, object? other) => Enumerate(source).Union<object>(Enumerate(other), ValueComparer.Instance!);

    public static IEnumerable<dynamic> Intersect(object? source, object? other) => Enumerate(source).Intersect<object>(Enumerate(other), ValueComparer.Instance!);

    public static IEnumerable<dynamic> Except(object? source, object? other) => Enumerate(source).Except<object>(Enumerate(other), ValueComparer.Instance!);

    public static IEnumerable<TResult> Zip<TResult>(object? source, object? other, Func<dynamic, dynamic, TResult> result) => Enumerate(source).Zip(Enumerate(other), result);

    public static IEnumerable<dynamic> Reverse(object? source) => source is string s ? [new string(s.Reverse().ToArray())] : Enumerate(source).Reverse();

    public static IEnumerable<dynamic> DefaultIfEmpty(object? source) => Enumerate(source).DefaultIfEmpty(DynamicNull.Instance);

    public static IEnumerable<dynamic> DefaultIfEmpty(object? source, object value) => Enumerate(source).DefaultIfEmpty(value);

    public static dynamic ElementAt(object? source, int index) => Enumerate(source).ElementAt(index);

    public static dynamic ElementAtOrDefault(object? source, int index) => Enumerate(source).ElementAtOrDefault(index) ?? DynamicNull.Instance;

    public static dynamic Aggregate(object? source, Func<dynamic, dynamic, object> func) => Enumerate(source).Aggregate<object>((object a, object b) => func(a, b));

    public static dynamic Aggregate(object? source, object seed, Func<dynamic, dynamic, object> func) => Enumerate(source).Aggregate<object, object>(seed, (object a, object b) => func(a, b));

    private static IOrderedEnumerable<dynamic> Ordered(object? source) =>
        source as IOrderedEnumerable<dynamic> ?? Enumerate(source).OrderBy(_ => 0);

    /// <summary>Longs add as longs (overflow goes to double), anything numeric else as double; nulls are skipped; no values: 0.</summary>
    private static object Add(IEnumerable<object?> values)
    {
        long l = 0;
        double d = 0;
        bool isDouble = false;
        foreach (var v in values)
        {
            switch (v)
            {
                case null or DynamicNull:
                    break;
                case long or int or short or byte when !isDouble:
                    long x = Convert.ToInt64(v, CultureInfo.InvariantCulture);
                    long sum = unchecked(l + x);
                    if (((l ^ sum) & (x ^ sum)) < 0)
                    {
                        isDouble = true;
                        d = (double)l + x;
                    }
                    else
                    {
                        l = sum;
                    }
                    break;
                default:
                    if (!isDouble)
                    {
                        isDouble = true;
                        d = l;
                    }
                    d += Number(v);
                    break;
            }
        }
        return isDouble ? d : l;
    }

    private static double? Mean(IEnumerable<object?> values)
    {
        double sum = 0;
        long n = 0;
        foreach (var v in values)
        {
            if (v is null or DynamicNull)
                continue;
            sum += Number(v);
            n++;
        }
        return n == 0 ? null : sum / n;
    }

    private static object Extreme(IEnumerable<object?> values, int sign)
    {
        object? best = null;
        foreach (var v in values)
        {
            if (v is null or DynamicNull)
                continue;
            if (best == null || sign * ValueComparer.Instance.Compare(v, best) > 0)
                best = v;
        }
        return best ?? DynamicNull.Instance;
    }

    private static double Number(object v) => v switch
    {
        double d => d,
        IConvertible c when v is not string => c.ToDouble(CultureInfo.InvariantCulture),
        string s when double.TryParse(s, NumberStyles.Float, CultureInfo.InvariantCulture, out double p) => p,
        _ => throw new InvalidOperationException($"'{v}' is not a number."),
    };

    /// <summary>Orders and compares index values: nulls first, numbers by value (long and double alike), text ordinally.</summary>
    internal sealed class ValueComparer : IComparer<object?>, IEqualityComparer<object?>
    {
        public static readonly ValueComparer Instance = new();

        public int Compare(object? x, object? y)
        {
            bool xn = DynamicJson.IsNull(x), yn = DynamicJson.IsNull(y);
            if (xn || yn)
                return xn == yn ? 0 : xn ? -1 : 1;
            if (IsNumber(x!) && IsNumber(y!))
                return Number(x!).CompareTo(Number(y!));
            if (x is IComparable cx && x.GetType() == y!.GetType())
                return cx.CompareTo(y);
            return string.CompareOrdinal(Convert.ToString(x, CultureInfo.InvariantCulture), Convert.ToString(y, CultureInfo.InvariantCulture));
        }

        public new bool Equals(object? x, object? y) => Compare(x, y) == 0;

        public int GetHashCode(object? obj) => obj switch
        {
            null or DynamicNull => 0,
            _ when IsNumber(obj) => Number(obj).GetHashCode(),
            _ => obj.GetHashCode(),
        };

        private static bool IsNumber(object v) => v is long or int or double or float or decimal or short or byte or uint or ulong;
    }
}
