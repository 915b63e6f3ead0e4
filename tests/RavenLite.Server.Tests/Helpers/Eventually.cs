namespace RavenLite.Server.Tests.Helpers;

/// <summary>Waiting on a condition with a deadline (multi-process and replication tests never sleep a fixed time).</summary>
public static class Eventually
{
    /// <summary>Polls <paramref name="condition"/> until it holds; fails with <paramref name="what"/> and the last state when <paramref name="timeout"/> passes.</summary>
    public static async Task HoldsAsync(Func<Task<bool>> condition, string what, TimeSpan? timeout = null, Func<Task<string>>? state = null)
    {
        var deadline = DateTime.UtcNow + (timeout ?? TimeSpan.FromSeconds(30));
        while (true)
        {
            if (await condition())
                return;
            if (DateTime.UtcNow > deadline)
                Assert.Fail($"Timed out waiting for {what}." + (state == null ? "" : " State: " + await state()));
            await Task.Delay(25);
        }
    }
}
