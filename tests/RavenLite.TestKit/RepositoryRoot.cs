namespace RavenLite.TestKit;

/// <summary>The repository a test runs from (the folder holding RavenLite.sln, above the test's output folder).</summary>
public static class RepositoryRoot
{
    public static string Find()
    {
        for (var dir = new DirectoryInfo(AppContext.BaseDirectory); dir != null; dir = dir.Parent)
            if (File.Exists(Path.Combine(dir.FullName, "RavenLite.sln")))
                return dir.FullName;
        throw new InvalidOperationException("not inside the repository");
    }
}
