namespace RavenLite.Server.Logging;

/// <summary>
/// The server's log mode as RavenDB's clients set it (<c>GET|POST /admin/logs/configuration</c>): <c>None</c> (no
/// logs), <c>Operations</c> (warnings and errors) or <c>Information</c>; applied to every logger on top of the configured
/// levels (<c>Logging:LogLevel</c>), which stay the floor. Not persisted: a restart takes the configured levels again.
/// Thread-safe.
/// </summary>
public sealed class LogMode
{
    private volatile string _mode;
    private LogLevel _minimum;
    private readonly LogLevel _configuredDefault;

    /// <param name="configuredDefault">The configured default level (<c>Logging:LogLevel:Default</c>), which names the starting mode.</param>
    public LogMode(LogLevel configuredDefault)
    {
        Configured = configuredDefault >= LogLevel.Warning ? "Operations" : "Information";
        _mode = Configured;
        _configuredDefault = configuredDefault;
        _minimum = configuredDefault;
    }

    /// <summary>The mode the configuration gives.</summary>
    public string Configured { get; }

    /// <summary>The current mode.</summary>
    public string Current => _mode;

    /// <summary>The modes.</summary>
    public static readonly string[] Modes = ["None", "Operations", "Information"];

    /// <summary>Sets the mode; 400 for a name that is not one.</summary>
    public void Set(string mode)
    {
        var minimum = mode switch
        {
            "None" => LogLevel.None,
            "Operations" => LogLevel.Warning,
            // The configured default: this filter, added last, is the rule chosen for every category the configuration
            // names no level of, so the configuration's own Default rule never applies.
            "Information" => _configuredDefault < LogLevel.Warning ? _configuredDefault : LogLevel.Information,
            _ => throw new BadRequestException($"Log mode '{mode}' is not one of {string.Join(", ", Modes)}."),
        };
        _minimum = minimum;
        _mode = mode;
    }

    /// <summary>The filter every logger applies.</summary>
    public bool Allows(LogLevel level) => level != LogLevel.None && level >= _minimum;
}
