using System.Buffers.Binary;

namespace RavenLite.Fuzz;

/// <summary>
/// Damage to a set of files as an input describes it (the storage and restore targets): edits of 7 bytes each — file,
/// kind, offset (4 bytes), value. The kinds flip bits, overwrite a run, truncate, or append; the file is picked among
/// the names in ordinal order and offsets wrap around its length, so every input means some damage.
/// </summary>
public static class ByteEdits
{
    public const int EditLength = 7;

    /// <summary>Applies the edits to <paramref name="files"/> (replacing edited arrays, never writing into the given ones).</summary>
    public static void Apply(Dictionary<string, byte[]> files, ReadOnlySpan<byte> edits)
    {
        if (files.Count == 0)
            return;
        var names = files.Keys.Order(StringComparer.Ordinal).ToArray();
        var copied = new HashSet<string>(StringComparer.Ordinal);
        for (int at = 0; at + EditLength <= edits.Length; at += EditLength)
        {
            string name = names[edits[at] % names.Length];
            if (copied.Add(name))
                files[name] = (byte[])files[name].Clone();
            var bytes = files[name];
            int kind = edits[at + 1] % 4;
            uint offset = BinaryPrimitives.ReadUInt32LittleEndian(edits[(at + 2)..]);
            byte value = edits[at + 6];
            switch (kind)
            {
                case 0 when bytes.Length > 0:
                    bytes[(int)(offset % bytes.Length)] ^= value == 0 ? (byte)1 : value;
                    break;
                case 1 when bytes.Length > 0:
                    int start = (int)(offset % bytes.Length);
                    bytes.AsSpan(start, Math.Min(bytes.Length - start, 1 + value)).Fill(value);
                    break;
                case 2:
                    files[name] = bytes[..(int)(offset % (bytes.Length + 1))];
                    break;
                case 3:
                    files[name] = [.. bytes, .. Enumerable.Repeat(value, 1 + (int)(offset % 8192))];
                    break;
            }
        }
    }
}
