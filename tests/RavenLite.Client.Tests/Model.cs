namespace RavenLite.Client.Tests;

public sealed class User
{
    public string? Id { get; set; }
    public string Name { get; set; } = "";
    public int Age { get; set; }
    public bool Active { get; set; }
    public string? CompanyId { get; set; }
    public Address? Address { get; set; }
    public List<string> Tags { get; set; } = [];
    public double Score { get; set; }
}

public sealed class Address
{
    public string City { get; set; } = "";
    public string Country { get; set; } = "";
}

public sealed class Company
{
    public string? Id { get; set; }
    public string Name { get; set; } = "";
}

public sealed class Category
{
    public string? Id { get; set; }
    public string Title { get; set; } = "";
}
