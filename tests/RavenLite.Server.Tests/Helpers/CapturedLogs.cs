using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace RavenLite.Server.Tests.Helpers;

/// <summary>A logger provider that keeps every entry at <paramref name="minimum"/> (Warning unless told) or above (category, level, message, exception) for a test to inspect.</summary>
public sealed class CapturedLogs(LogLevel minimum = LogLevel.Warning) : ILoggerProvider
{
    private readonly ConcurrentQueue<string> _entries = new();

    /// <summary>The entries so far, oldest first.</summary>
    public IReadOnlyList<string> Entries => [.. _entries];

    /// <inheritdoc />
    public ILogger CreateLogger(string categoryName) => new Logger(categoryName, _entries, minimum);

    /// <inheritdoc />
    public void Dispose()
    {
    }

    private sealed class Logger(string category, ConcurrentQueue<string> entries, LogLevel minimum) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel >= minimum;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (IsEnabled(logLevel))
                entries.Enqueue($"{logLevel} {category}: {formatter(state, exception)} {exception?.GetType().Name} {exception?.Message}");
        }
    }
}
