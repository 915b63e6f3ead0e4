namespace RavenLite.Client.Http;

/// <summary>Which node of a database's group a read goes to (RavenDB's <c>ReadBalanceBehavior</c>); writes always go to the preferred node.</summary>
public enum ReadBalanceBehavior
{
    /// <summary>Reads go to the preferred node (the first of the topology that answers), as writes do.</summary>
    None,

    /// <summary>Each read goes to the next node of the topology in turn.</summary>
    RoundRobin,

    /// <summary>Reads go to the node that answered first when a read was sent to all of them (measured again every 128 reads).</summary>
    FastestNode,
}
