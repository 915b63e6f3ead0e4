using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace RavenLite.Fuzz;

/// <summary>The errors the fuzzed server logs (every category, Error and above), kept until taken.</summary>
public sealed class LoggedErrors : ILoggerProvider
{
    private readonly ConcurrentQueue<string> _entries = new();

    public ILogger CreateLogger(string categoryName) => new Logger(this, categoryName);

    /// <summary>The errors logged since the last call.</summary>
    public List<string> Take()
    {
        var taken = new List<string>();
        while (_entries.TryDequeue(out var e))
            taken.Add(e);
        return taken;
    }

    public void Dispose()
    {
    }

    private sealed class Logger(LoggedErrors owner, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel >= LogLevel.Error;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (IsEnabled(logLevel))
                owner._entries.Enqueue($"{category}: {formatter(state, exception)} {exception}");
        }
    }
}
