using Microsoft.Extensions.DependencyInjection;
using RavenLite.Client.Session;

namespace RavenLite.Client.DependencyInjection;

/// <summary>Registers RavenLite in Microsoft.Extensions.DependencyInjection.</summary>
public static class RavenLiteServiceCollectionExtensions
{
    /// <summary>
    /// Registers one initialized <see cref="IDocumentStore"/> (singleton, disposed with the container)
    /// configured by <paramref name="configure"/>, and a scoped <see cref="IAsyncDocumentSession"/>
    /// (one unit of work per scope, for example per HTTP request).
    /// </summary>
    public static IServiceCollection AddRavenLite(this IServiceCollection services, Action<DocumentStore> configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configure);
        services.AddSingleton<IDocumentStore>(_ =>
        {
            var store = new DocumentStore();
            configure(store);
            return store.Initialize();
        });
        services.AddScoped(sp => sp.GetRequiredService<IDocumentStore>().OpenAsyncSession());
        return services;
    }
}
