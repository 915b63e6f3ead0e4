namespace RavenLite.Storage;

/// <summary>The environment stopped accepting writes after an I/O error; dispose and reopen it to recover from the journal.</summary>
public sealed class StorageFailedException(string message, Exception? inner) : Exception(message, inner);
