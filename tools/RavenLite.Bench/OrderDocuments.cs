using System.Globalization;
using System.Text;

namespace RavenLite.Bench;

/// <summary>
/// The server suites' documents (docs/benchmarks.md): orders of about 1 KB with nested
/// lines, strings, numbers and dates, from a fixed seed, pre-generated as UTF-8 so neither engine
/// pays for generation while timed.
/// </summary>
internal sealed class OrderDocuments
{
    private static readonly string[] Cities = ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Ghent", "Brno", "Cork"];
    private static readonly string[] Products = ["Chai", "Chang", "Aniseed Syrup", "Chef Anton's Cajun Seasoning", "Grandma's Boysenberry Spread", "Uncle Bob's Organic Dried Pears", "Northwoods Cranberry Sauce", "Mishi Kobe Niku", "Ikura", "Queso Cabrales"];

    public OrderDocuments(int count, int seed = 42)
    {
        var rnd = new Random(seed);
        var offsets = new int[count + 1];
        var buffer = new MemoryStream(count * 1100);
        var sb = new StringBuilder(1400);
        var c = CultureInfo.InvariantCulture;
        var start = new DateTime(2020, 1, 1, 0, 0, 0, DateTimeKind.Utc);
        for (int i = 0; i < count; i++)
        {
            sb.Clear();
            sb.Append(c, $"{{\"Company\":\"companies/{rnd.Next(1, 5000)}-A\",\"Employee\":\"employees/{rnd.Next(1, 200)}-A\",");
            sb.Append(c, $"\"OrderedAt\":\"{start.AddMinutes(rnd.Next(0, 2_000_000)):yyyy-MM-ddTHH:mm:ss.fffffffZ}\",\"RequireAt\":\"{start.AddMinutes(rnd.Next(2_000_000, 2_100_000)):yyyy-MM-ddTHH:mm:ss.fffffffZ}\",");
            sb.Append(c, $"\"ShipVia\":\"shippers/{rnd.Next(1, 4)}-A\",\"Freight\":{rnd.Next(100, 100000) / 100.0},\"Status\":\"{(rnd.Next(4) == 0 ? "Shipped" : "Pending")}\",");
            sb.Append(c, $"\"ShipTo\":{{\"Line1\":\"{rnd.Next(1, 999)} Main Street\",\"City\":\"{Cities[rnd.Next(Cities.Length)]}\",\"PostalCode\":\"{rnd.Next(10000, 99999)}\",\"Country\":\"Country {rnd.Next(1, 40)}\",\"Location\":{{\"Latitude\":{rnd.NextDouble() * 180 - 90:F6},\"Longitude\":{rnd.NextDouble() * 360 - 180:F6}}}}},");
            sb.Append("\"Lines\":[");
            for (int l = 0; l < 5; l++)
            {
                int p = rnd.Next(Products.Length);
                sb.Append(c, $"{(l == 0 ? "" : ",")}{{\"Product\":\"products/{p + 1}-A\",\"ProductName\":\"{Products[p]}\",\"PricePerUnit\":{rnd.Next(100, 20000) / 100.0},\"Quantity\":{rnd.Next(1, 60)},\"Discount\":{rnd.Next(0, 4) * 0.05:F2}}}");
            }
            sb.Append(c, $"],\"Notes\":\"{new string((char)('a' + rnd.Next(26)), rnd.Next(20, 120))}\",\"@metadata\":{{\"@collection\":\"Orders\"}}}}");
            var bytes = Encoding.UTF8.GetBytes(sb.ToString());
            buffer.Write(bytes);
            offsets[i + 1] = (int)buffer.Length;
        }
        Data = buffer.GetBuffer();
        Offsets = offsets;
        Count = count;
    }

    public int Count { get; }

    /// <summary>All documents back to back.</summary>
    public byte[] Data { get; }

    /// <summary>Document i is Data[Offsets[i]..Offsets[i+1]].</summary>
    public int[] Offsets { get; }

    public ReadOnlyMemory<byte> Document(int i) => Data.AsMemory(Offsets[i], Offsets[i + 1] - Offsets[i]);

    public long TotalBytes => Offsets[Count];

    public static string Id(int i) => "orders/" + i.ToString(CultureInfo.InvariantCulture) + "-A";
}
