namespace RavenLite.Server.Formatting;

/// <summary>RavenDB's Size shape in answers: <c>{"HumaneSize": "1.5 KBytes", "SizeInBytes": 1536}</c>.</summary>
public static class Sizes
{
    /// <summary>Writes property <paramref name="name"/> as a Size of <paramref name="bytes"/>.</summary>
    public static void Write(Utf8JsonWriter w, string name, long bytes)
    {
        ArgumentNullException.ThrowIfNull(w);
        w.WriteStartObject(name);
        w.WriteString("HumaneSize", Humane(bytes));
        w.WriteNumber("SizeInBytes", bytes);
        w.WriteEndObject();
    }

    /// <summary>Bytes in the largest unit that keeps the number at 1 or more (two decimals at most).</summary>
    public static string Humane(long bytes)
    {
        string[] units = ["Bytes", "KBytes", "MBytes", "GBytes", "TBytes"];
        double v = bytes;
        int u = 0;
        while (v >= 1024 && u < units.Length - 1)
        {
            v /= 1024;
            u++;
        }
        return u == 0 ? $"{bytes} Bytes" : string.Create(System.Globalization.CultureInfo.InvariantCulture, $"{v:0.##} {units[u]}");
    }
}
