namespace RavenLite.Server.Errors;

/// <summary>
/// An index definition outside what RavenLite understands; names the definition property and the text at fault
/// (the official clients read both, from the answer's <c>IndexDefinitionProperty</c> and <c>ProblematicText</c>).
/// </summary>
public sealed class IndexCompilationException : DomainException
{
    /// <summary>An error in <paramref name="property"/> of the definition (<c>Maps</c>, <c>Reduce</c>, <c>Fields</c>...), at <paramref name="problematicText"/>.</summary>
    public IndexCompilationException(string message, string property, string problematicText)
        : base(RavenExceptionTypes.IndexCompilation, message)
    {
        Property = property;
        ProblematicText = problematicText;
        Extra = new Dictionary<string, string> { ["IndexDefinitionProperty"] = property, ["ProblematicText"] = problematicText };
    }

    /// <summary>The definition property at fault.</summary>
    public string Property { get; }

    /// <summary>The text at fault.</summary>
    public string ProblematicText { get; }
}
