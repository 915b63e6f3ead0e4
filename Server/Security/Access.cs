namespace RavenLite.Server.Security;

/// <summary>What a route requires of the caller on a secured server (every route names one; <see cref="AccessPolicy"/> decides).</summary>
public enum Access
{
    /// <summary>No certificate needed: health probes, the Studio's static files, the answer for an unknown route.</summary>
    Anonymous,

    /// <summary>Any registered certificate (whoami, version, topology, the database list).</summary>
    ValidUser,

    /// <summary>Read access to the route's database (<c>{db}</c>, or <c>?name=</c>): Read, ReadWrite or Admin.</summary>
    DatabaseRead,

    /// <summary>Write access to the route's database: ReadWrite or Admin.</summary>
    DatabaseReadWrite,

    /// <summary>Admin access to the route's database (indexes, settings, backups, tasks).</summary>
    DatabaseAdmin,

    /// <summary>Server administration: Operator or ClusterAdmin clearance.</summary>
    Operator,

    /// <summary>ClusterAdmin clearance only.</summary>
    ClusterAdmin,
}

/// <summary>The endpoint metadata naming a route's <see cref="Access"/>.</summary>
[AttributeUsage(AttributeTargets.Method | AttributeTargets.Class, AllowMultiple = false)]
public sealed class RequiresAccessAttribute(Access access) : Attribute
{
    /// <summary>What the route requires.</summary>
    public Access Access { get; } = access;
}

/// <summary><c>.Requires(Access.X)</c> on a mapped route.</summary>
public static class AccessExtensions
{
    /// <summary>Names what the route requires on a secured server.</summary>
    public static TBuilder Requires<TBuilder>(this TBuilder builder, Access access) where TBuilder : IEndpointConventionBuilder =>
        builder.WithMetadata(new RequiresAccessAttribute(access));
}
