namespace RavenLite.Storage;

/// <summary>An encrypted environment was opened without its key or with another key, or an unencrypted one with a key: nothing was read or changed.</summary>
public sealed class StorageEncryptionException(string message) : Exception(message);
