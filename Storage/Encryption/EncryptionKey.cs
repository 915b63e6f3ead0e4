using System.Buffers;
using System.Security.Cryptography;
using NSec.Cryptography;

namespace RavenLite.Storage.Encryption;

/// <summary>
/// The 256-bit key of an encrypted environment, and the one cipher everything encrypted is sealed with:
/// XChaCha20-Poly1305 (libsodium through NSec; RavenDB's cipher too) — a 24-byte random nonce per seal, so no nonce
/// is ever managed or reused, and a 16-byte tag that authenticates the bytes and what they are bound to (a page's
/// number, a journal record's header), so a damaged, moved or replayed ciphertext is refused as corruption.
/// docs/security.md "Encryption at rest" says what is encrypted and the threat model.
/// </summary>
public sealed class EncryptionKey : IDisposable
{
    /// <summary>Key length in bytes.</summary>
    public const int KeySize = 32;

    /// <summary>Nonce length in bytes.</summary>
    public const int NonceSize = 24;

    /// <summary>Tag length in bytes.</summary>
    public const int TagSize = 16;

    /// <summary>Nonce then tag, as stored beside a sealed page.</summary>
    public const int SealSize = NonceSize + TagSize;

    private const int ScratchOnStack = 16384;
    private static readonly AeadAlgorithm Algorithm = AeadAlgorithm.XChaCha20Poly1305;
    private static readonly byte[] CheckDomain = "RavenLite key check v1"u8.ToArray();
    private readonly Key _key;

    private EncryptionKey(Key key) => _key = key;

    /// <summary>A key from its 32 bytes (the caller wipes its copy).</summary>
    public static EncryptionKey FromBytes(ReadOnlySpan<byte> key)
    {
        if (key.Length != KeySize)
            throw new ArgumentException($"An encryption key is {KeySize} bytes, not {key.Length}.", nameof(key));
        return new EncryptionKey(Key.Import(Algorithm, key, KeyBlobFormat.RawSymmetricKey));
    }

    /// <summary>
    /// Seals <paramref name="plain"/> into <paramref name="cipher"/> (the same length) and writes nonce then tag to
    /// <paramref name="seal"/> (<see cref="SealSize"/> bytes); <paramref name="boundTo"/> is authenticated, not stored.
    /// </summary>
    public void Seal(ReadOnlySpan<byte> plain, Span<byte> cipher, Span<byte> seal, ReadOnlySpan<byte> boundTo)
    {
        var nonce = seal[..NonceSize];
        RandomNumberGenerator.Fill(nonce);
        Seal(plain, cipher, seal[NonceSize..SealSize], nonce, boundTo);
    }

    /// <summary>
    /// Seals with a nonce the caller guarantees is used once under this key (a random base nonce with a counter in its
    /// last eight bytes: the chunks of one journal record); writes the tag to <paramref name="tag"/>.
    /// </summary>
    public void Seal(ReadOnlySpan<byte> plain, Span<byte> cipher, Span<byte> tag, ReadOnlySpan<byte> nonce, ReadOnlySpan<byte> boundTo)
    {
        // libsodium writes ciphertext and tag as one run: into scratch (the stack for pages, the pool for larger runs).
        int length = plain.Length + TagSize;
        byte[]? rented = null;
        Span<byte> combined = length <= ScratchOnStack ? stackalloc byte[length] : (rented = ArrayPool<byte>.Shared.Rent(length)).AsSpan(0, length);
        try
        {
            Algorithm.Encrypt(_key, nonce, boundTo, plain, combined);
            combined[..plain.Length].CopyTo(cipher);
            combined[plain.Length..].CopyTo(tag);
        }
        finally
        {
            if (rented != null)
                ArrayPool<byte>.Shared.Return(rented);
        }
    }

    /// <summary>Opens what <see cref="Seal(ReadOnlySpan{byte}, Span{byte}, Span{byte}, ReadOnlySpan{byte}, ReadOnlySpan{byte})"/> sealed with <paramref name="nonce"/>; false when it does not authenticate.</summary>
    public bool Open(ReadOnlySpan<byte> cipher, ReadOnlySpan<byte> tag, ReadOnlySpan<byte> nonce, Span<byte> plain, ReadOnlySpan<byte> boundTo)
    {
        int length = cipher.Length + TagSize;
        byte[]? rented = null;
        Span<byte> combined = length <= ScratchOnStack ? stackalloc byte[length] : (rented = ArrayPool<byte>.Shared.Rent(length)).AsSpan(0, length);
        try
        {
            cipher.CopyTo(combined);
            tag.CopyTo(combined[cipher.Length..]);
            return Algorithm.Decrypt(_key, nonce, boundTo, combined, plain);
        }
        finally
        {
            if (rented != null)
                ArrayPool<byte>.Shared.Return(rented);
        }
    }

    /// <summary>Opens what <see cref="Seal(ReadOnlySpan{byte}, Span{byte}, Span{byte}, ReadOnlySpan{byte})"/> sealed; false when it does not authenticate (damaged, moved, or another key's), and <paramref name="plain"/> is then not to be used.</summary>
    public bool Open(ReadOnlySpan<byte> cipher, ReadOnlySpan<byte> seal, Span<byte> plain, ReadOnlySpan<byte> boundTo) =>
        Open(cipher, seal[NonceSize..SealSize], seal[..NonceSize], plain, boundTo);

    /// <summary>
    /// Sixteen bytes that tell this key from another without revealing it: the tag of an empty message under a fixed
    /// nonce (always the same message, so the fixed nonce is never reused for another). Kept in the environment's header.
    /// </summary>
    public void Check(Span<byte> check)
    {
        Span<byte> nonce = stackalloc byte[NonceSize];
        nonce.Clear();
        Span<byte> tag = stackalloc byte[TagSize];
        Algorithm.Encrypt(_key, nonce, CheckDomain, [], tag);
        tag.CopyTo(check);
    }

    /// <summary>The check value (<see cref="Check"/>) as base64, as files outside the storage keep it.</summary>
    public string CheckBase64()
    {
        Span<byte> check = stackalloc byte[TagSize];
        Check(check);
        return Convert.ToBase64String(check);
    }

    /// <summary>
    /// What a piece of a sealed whole is bound to: the whole's name (UTF-8), the piece's number (int64 LE) and whether it
    /// is the last — so a piece moved to another whole or place, or a whole cut short, does not authenticate.
    /// </summary>
    public static byte[] Binding(string whole, long piece, bool last)
    {
        ArgumentNullException.ThrowIfNull(whole);
        var bytes = new byte[System.Text.Encoding.UTF8.GetByteCount(whole) + 9];
        int n = System.Text.Encoding.UTF8.GetBytes(whole, bytes);
        System.Buffers.Binary.BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(n), piece);
        bytes[^1] = last ? (byte)1 : (byte)0;
        return bytes;
    }

    public void Dispose() => _key.Dispose();
}
