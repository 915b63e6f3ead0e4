namespace RavenLite.Storage;

/// <summary>The files on disk are not a valid environment; opening refuses. The message names the file and offset.</summary>
public sealed class StorageCorruptionException(string message) : Exception(message);

/// <summary>The environment stopped accepting writes after an I/O error; dispose and reopen it to recover from the journal.</summary>
public sealed class StorageFailedException(string message, Exception? inner) : Exception(message, inner);

/// <summary>A key, value or transaction exceeds a documented limit.</summary>
public sealed class StorageLimitException(string message) : ArgumentException(message);
