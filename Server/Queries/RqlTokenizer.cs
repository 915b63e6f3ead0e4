namespace RavenLite.Server.Queries;

/// <summary>The kinds of <see cref="RqlToken"/>.</summary>
internal enum RqlTokenKind
{
    Word,
    String,
    Number,
    Parameter,
    Symbol,
    Script, // { ... } of JavaScript, braces included
    End,
}

/// <summary>One token of RQL text: its kind, its text (a string's without quotes, a parameter's without <c>$</c>) and where it starts.</summary>
internal readonly record struct RqlToken(RqlTokenKind Kind, string Text, int Position);

/// <summary>
/// Splits RQL text into <see cref="RqlToken"/>s, ending with one <see cref="RqlTokenKind.End"/>: words, quoted strings
/// (backslash escapes), numbers, <c>$parameters</c>, symbols, and JavaScript in braces kept whole (up to the matching
/// brace, strings inside skipped). A character outside RQL is a 400 naming its position.
/// </summary>
internal sealed class RqlTokenizer
{
    private readonly string _s;
    private readonly List<RqlToken> _tokens = [];
    private int _i;

    private RqlTokenizer(string text) => _s = text;

    /// <summary>The tokens of <paramref name="text"/>.</summary>
    /// <exception cref="InvalidQueryException">A string or script not closed, a bare <c>$</c>, an unknown character.</exception>
    public static List<RqlToken> Tokenize(string text)
    {
        var tokenizer = new RqlTokenizer(text);
        tokenizer.Run();
        return tokenizer._tokens;
    }

    /// <summary>The 400 of a query that cannot be read, naming the position.</summary>
    public static InvalidQueryException Error(string message, int position) =>
        new($"Invalid query at position {position}: {message}");

    private void Run()
    {
        while (_i < _s.Length)
        {
            char c = _s[_i];
            if (char.IsWhiteSpace(c))
                _i++;
            else if (c is '\'' or '"')
                QuotedString(c);
            else if (c == '{')
                Script();
            else if (c == '$')
                Parameter();
            else if (char.IsDigit(c) || (c == '-' && _i + 1 < _s.Length && char.IsDigit(_s[_i + 1])))
                Number();
            else if (char.IsLetter(c) || c is '_' or '@')
                Word();
            else
                Symbol(c);
        }
        _tokens.Add(new RqlToken(RqlTokenKind.End, "", _s.Length));
    }

    private void QuotedString(char quote)
    {
        int start = _i++;
        var sb = new StringBuilder();
        while (true)
        {
            if (_i >= _s.Length)
                throw Error($"the string starting here is not closed with {quote}", start);
            if (_s[_i] == '\\' && _i + 1 < _s.Length)
            {
                sb.Append(_s[_i + 1]);
                _i += 2;
                continue;
            }
            if (_s[_i] == quote)
            {
                _i++;
                break;
            }
            sb.Append(_s[_i++]);
        }
        _tokens.Add(new RqlToken(RqlTokenKind.String, sb.ToString(), start));
    }

    /// <summary>JavaScript (a select object literal or a declared function's body): up to the matching brace.</summary>
    private void Script()
    {
        int start = _i;
        int depth = 0;
        char quote = '\0';
        for (; _i < _s.Length; _i++)
        {
            char d = _s[_i];
            if (quote != '\0')
            {
                if (d == '\\')
                    _i++;
                else if (d == quote)
                    quote = '\0';
                continue;
            }
            if (d is '\'' or '"' or '`')
                quote = d;
            else if (d == '{')
                depth++;
            else if (d == '}' && --depth == 0)
                break;
        }
        if (_i >= _s.Length)
            throw Error("the '{' starting here is not closed", start);
        _i++;
        _tokens.Add(new RqlToken(RqlTokenKind.Script, _s[start.._i], start));
    }

    private void Parameter()
    {
        int start = _i++;
        while (_i < _s.Length && (char.IsLetterOrDigit(_s[_i]) || _s[_i] == '_'))
            _i++;
        if (_i == start + 1)
            throw Error("'$' must be followed by a parameter name", start);
        _tokens.Add(new RqlToken(RqlTokenKind.Parameter, _s[(start + 1).._i], start));
    }

    private void Number()
    {
        int start = _i++;
        while (_i < _s.Length && (char.IsDigit(_s[_i]) || _s[_i] is '.' or 'e' or 'E' || (_s[_i] is '+' or '-' && _s[_i - 1] is 'e' or 'E')))
            _i++;
        _tokens.Add(new RqlToken(RqlTokenKind.Number, _s[start.._i], start));
    }

    private void Word()
    {
        int start = _i++;
        while (_i < _s.Length && (char.IsLetterOrDigit(_s[_i]) || _s[_i] is '_' or '@' or '-'))
            _i++;
        _tokens.Add(new RqlToken(RqlTokenKind.Word, _s[start.._i], start));
    }

    private void Symbol(char c)
    {
        string two = _i + 1 < _s.Length ? _s.Substring(_i, 2) : "";
        if (two is "==" or "!=" or "<>" or "<=" or ">=" or "[]")
        {
            _tokens.Add(new RqlToken(RqlTokenKind.Symbol, two, _i));
            _i += 2;
        }
        else if (c is '(' or ')' or ',' or '.' or '=' or '<' or '>')
        {
            _tokens.Add(new RqlToken(RqlTokenKind.Symbol, c.ToString(), _i));
            _i++;
        }
        else
        {
            throw Error($"unexpected character '{c}'", _i);
        }
    }
}
