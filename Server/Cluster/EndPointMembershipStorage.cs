using System.Net;
using DotNext.Net.Cluster.Consensus.Raft.Membership;

namespace RavenLite.Server.Cluster;

/// <summary>The Raft members, kept in a file by DotNext; each member's address stored as <c>host:port</c> (UTF-8, length-prefixed).</summary>
internal sealed class EndPointMembershipStorage(string path) : PersistentClusterConfigurationStorage<EndPoint>(path)
{
    protected override void Encode(EndPoint address, ref DotNext.Buffers.BufferWriterSlim<byte> output)
    {
        var bytes = Encoding.UTF8.GetBytes(ClusterNode.Format(address));
        Span<byte> length = stackalloc byte[4];
        BinaryPrimitives.WriteInt32LittleEndian(length, bytes.Length);
        output.Write(length);
        output.Write(bytes);
    }

    protected override EndPoint Decode(ref DotNext.Buffers.SequenceReader input)
    {
        Span<byte> length = stackalloc byte[4];
        input.Read(length);
        var bytes = new byte[BinaryPrimitives.ReadInt32LittleEndian(length)];
        input.Read(bytes);
        return IPEndPoint.Parse(Encoding.UTF8.GetString(bytes));
    }
}
