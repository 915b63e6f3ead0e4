namespace RavenLite.Storage;

/// <summary>A key, value or transaction exceeds a documented limit.</summary>
public sealed class StorageLimitException(string message) : ArgumentException(message);
