namespace RavenLite.Storage;

/// <summary>The files on disk are not a valid environment; opening refuses. The message names the file and offset.</summary>
public sealed class StorageCorruptionException(string message) : Exception(message);
