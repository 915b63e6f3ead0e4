using System.Security.Cryptography;
using RavenLite.Server.Configuration;
using RavenLite.Storage.Encryption;

namespace RavenLite.Server.Databases;

/// <summary>
/// The keys of encrypted databases (docs/security.md "Encryption at rest"): each database's 256-bit key, distributed by
/// an administrator (<c>POST /admin/secrets</c>), is kept in <c>{DataDir}/System/secrets.json</c> sealed with the
/// server's master key (<see cref="MasterKeySettings"/>) and bound to the database's name — never in plain text on disk.
/// The file records the master key's check value: a server started with another master key refuses to read it, unless
/// the previous key is configured too, and then every database key is re-wrapped with the new one (a rotation). The
/// master key is read when the server starts; a key file that others can read refuses the start. Thread-safe.
/// </summary>
public sealed class DatabaseKeys
{
    private const string FileName = "secrets.json";
    private readonly string _path;
    private readonly EncryptionKey? _master;
    private readonly object _lock = new();
    private Dictionary<string, string> _sealed; // lower-cased name → base64(seal + sealed key)

    public DatabaseKeys(ServerOptions options)
    {
        ArgumentNullException.ThrowIfNull(options);
        string dir = Path.Combine(Path.GetFullPath(options.DataDir), "System");
        Directory.CreateDirectory(dir);
        _path = Path.Combine(dir, FileName);
        var settings = options.Security.MasterKey;
        _master = settings.Configured ? Load(settings.Path, settings.Environment, "Security:MasterKey") : null;
        _sealed = new(StringComparer.Ordinal);
        if (!File.Exists(_path))
            return;
        using var json = JsonDocument.Parse(File.ReadAllBytes(_path));
        foreach (var p in json.RootElement.GetProperty("Keys").EnumerateObject())
            _sealed[p.Name] = p.Value.GetString() ?? "";
        string check = json.RootElement.GetProperty("MasterKeyCheck").GetString() ?? "";
        if (_sealed.Count == 0)
            return;
        if (_master == null)
            throw new InvalidOperationException($"'{_path}' holds the keys of encrypted databases, but no master key is configured (Security:MasterKey:Path or Security:MasterKey:Environment).");
        if (check == _master.CheckBase64())
            return;
        if (settings.PreviousPath is { Length: > 0 } || settings.PreviousEnvironment is { Length: > 0 })
        {
            using var previous = Load(settings.PreviousPath, settings.PreviousEnvironment, "Security:MasterKey:Previous");
            if (check != previous.CheckBase64())
                throw new InvalidOperationException($"Neither the master key nor the previous one is the key '{_path}' was sealed with.");
            Rotate(previous);
            return;
        }
        throw new InvalidOperationException($"The master key is not the key '{_path}' was sealed with; to rotate it, name the old one in Security:MasterKey:PreviousPath (or PreviousEnvironment).");
    }

    /// <summary>True when a master key is configured (encrypted databases are possible).</summary>
    public bool Available => _master != null;

    /// <summary>True when a key is stored for <paramref name="database"/>.</summary>
    public bool Has(string database)
    {
        lock (_lock)
            return _sealed.ContainsKey(database.ToLowerInvariant());
    }

    /// <summary>A new random key, base64 (RavenDB's <c>/admin/secrets/generate</c>).</summary>
    public static string Generate() => Convert.ToBase64String(RandomNumberGenerator.GetBytes(EncryptionKey.KeySize));

    /// <summary>
    /// Stores <paramref name="base64Key"/> for <paramref name="database"/>: 400 for a key that is not 256 bits of base64
    /// or when no master key is configured; 409 when the database has a key already and <paramref name="overwrite"/> is false.
    /// </summary>
    public void Put(string database, string base64Key, bool overwrite)
    {
        var master = _master ?? throw new BadRequestException("No master key is configured (Security:MasterKey:Path or Security:MasterKey:Environment): this server cannot keep database keys.");
        byte[] key;
        try
        {
            key = Convert.FromBase64String(base64Key.Trim());
        }
        catch (FormatException)
        {
            throw new BadRequestException("The key must be base64.");
        }
        try
        {
            if (key.Length != EncryptionKey.KeySize)
                throw new BadRequestException($"The size of the key must be 256 bits, but was {key.Length * 8} bits.");
            lock (_lock)
            {
                string name = database.ToLowerInvariant();
                if (_sealed.ContainsKey(name) && !overwrite)
                    throw new ConcurrencyException($"A key for database '{database}' is already stored; overwriting it would make the database unreadable.");
                _sealed[name] = Seal(master, name, key);
                Save();
            }
        }
        finally
        {
            CryptographicOperations.ZeroMemory(key);
        }
    }

    /// <summary>The key of <paramref name="database"/>, or null when none is stored (the caller disposes it).</summary>
    public EncryptionKey? KeyFor(string database)
    {
        string? stored;
        lock (_lock)
            _sealed.TryGetValue(database.ToLowerInvariant(), out stored);
        if (stored == null || _master == null)
            return null;
        var key = Open(_master, database.ToLowerInvariant(), stored);
        try
        {
            return EncryptionKey.FromBytes(key);
        }
        finally
        {
            CryptographicOperations.ZeroMemory(key);
        }
    }

    /// <summary>Forgets the key of a deleted database.</summary>
    public void Delete(string database)
    {
        lock (_lock)
        {
            if (_sealed.Remove(database.ToLowerInvariant()))
                Save();
        }
    }

    private void Rotate(EncryptionKey previous)
    {
        foreach (var (name, stored) in _sealed.ToList())
        {
            var key = Open(previous, name, stored);
            _sealed[name] = Seal(_master!, name, key);
            CryptographicOperations.ZeroMemory(key);
        }
        Save();
    }

    private static string Seal(EncryptionKey master, string name, byte[] key)
    {
        var stored = new byte[EncryptionKey.SealSize + EncryptionKey.KeySize];
        master.Seal(key, stored.AsSpan(EncryptionKey.SealSize), stored.AsSpan(0, EncryptionKey.SealSize), Encoding.UTF8.GetBytes(name));
        return Convert.ToBase64String(stored);
    }

    private byte[] Open(EncryptionKey master, string name, string stored)
    {
        var bytes = Convert.FromBase64String(stored);
        var key = new byte[EncryptionKey.KeySize];
        if (bytes.Length != EncryptionKey.SealSize + EncryptionKey.KeySize
            || !master.Open(bytes.AsSpan(EncryptionKey.SealSize), bytes.AsSpan(0, EncryptionKey.SealSize), key, Encoding.UTF8.GetBytes(name)))
            throw new InvalidOperationException($"The key of database '{name}' in '{_path}' does not open with the master key: the file is damaged.");
        return key;
    }


    /// <summary>Written whole, to a file only the server's user may read, then renamed over the old one.</summary>
    private void Save()
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>();
        using (var w = new Utf8JsonWriter(buffer, new JsonWriterOptions { Indented = true }))
        {
            w.WriteStartObject();
            w.WriteString("MasterKeyCheck", _master!.CheckBase64());
            w.WriteStartObject("Keys");
            foreach (var (name, stored) in _sealed.OrderBy(p => p.Key, StringComparer.Ordinal))
                w.WriteString(name, stored);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        string tmp = _path + ".tmp";
        var create = new FileStreamOptions { Mode = FileMode.Create, Access = FileAccess.Write };
        if (!OperatingSystem.IsWindows())
            create.UnixCreateMode = UnixFileMode.UserRead | UnixFileMode.UserWrite;
        File.Delete(tmp); // the mode applies to a file it creates
        using (var f = new FileStream(tmp, create))
        {
            f.Write(buffer.WrittenSpan);
            f.Flush(flushToDisk: true);
        }
        File.Move(tmp, _path, overwrite: true);
    }

    /// <summary>Reads a master key from a file (32 bytes or their base64; only its owner may read it) or an environment variable (base64).</summary>
    private static EncryptionKey Load(string? path, string? variable, string setting)
    {
        byte[] key;
        if (!string.IsNullOrWhiteSpace(path))
        {
            if (!File.Exists(path))
                throw new InvalidOperationException($"{setting}: the key file '{path}' does not exist.");
            if (!OperatingSystem.IsWindows())
            {
                var mode = File.GetUnixFileMode(path);
                const UnixFileMode others = UnixFileMode.GroupRead | UnixFileMode.GroupWrite | UnixFileMode.GroupExecute | UnixFileMode.OtherRead | UnixFileMode.OtherWrite | UnixFileMode.OtherExecute;
                if ((mode & others) != 0)
                    throw new InvalidOperationException($"{setting}: the key file '{path}' may be read by other users (mode {Convert.ToString((int)mode, 8)}); make it readable by the server's user only (chmod 600).");
            }
            var raw = File.ReadAllBytes(path);
            key = raw.Length == EncryptionKey.KeySize ? raw : Decode(Encoding.ASCII.GetString(raw), $"{setting}: the key file '{path}'");
        }
        else
        {
            string value = System.Environment.GetEnvironmentVariable(variable!) ?? throw new InvalidOperationException($"{setting}: the environment variable '{variable}' is not set.");
            key = Decode(value, $"{setting}: the environment variable '{variable}'");
        }
        try
        {
            return EncryptionKey.FromBytes(key);
        }
        finally
        {
            CryptographicOperations.ZeroMemory(key);
        }
    }

    private static byte[] Decode(string text, string what)
    {
        try
        {
            var key = Convert.FromBase64String(text.Trim());
            return key.Length == EncryptionKey.KeySize ? key : throw new InvalidOperationException($"{what} holds {key.Length * 8} bits; a master key is 256 bits.");
        }
        catch (FormatException)
        {
            throw new InvalidOperationException($"{what} is neither 32 bytes nor their base64.");
        }
    }
}
