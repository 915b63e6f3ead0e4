using System.Globalization;

namespace RavenLite.Storage.Journal;

/// <summary>Journal file naming: <c>journal/0000000000000000001.journal</c> (19 digits), spares <c>journal/spare-N.recycle</c>.</summary>
internal static class JournalFileNames
{
    public const string Extension = ".journal";

    public static string For(string journalDir, long number) =>
        Path.Combine(journalDir, number.ToString("D19", CultureInfo.InvariantCulture) + Extension);

    public static bool TryParse(string fileName, out long number)
    {
        number = 0;
        return fileName.Length == 19 + Extension.Length
            && fileName.EndsWith(Extension, StringComparison.Ordinal)
            && long.TryParse(fileName.AsSpan(0, 19), NumberStyles.None, CultureInfo.InvariantCulture, out number)
            && number > 0;
    }

    public static bool IsSpare(string fileName) => fileName.StartsWith("spare-", StringComparison.Ordinal) && fileName.EndsWith(".recycle", StringComparison.Ordinal);
}
