namespace RavenLite.Fuzz;

/// <summary>An input the product did not handle as promised: a 5xx, a 4xx without RavenDB's error shape, wrong data.</summary>
public sealed class FuzzFindingException(string message) : Exception(message);
