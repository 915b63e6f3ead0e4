using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;

namespace RavenLite.Fuzz;

/// <summary>
/// A few documents of two collections, with a counter, a time series and an attachment, and one static map-reduce
/// index: what the query, script and document targets find in the fuzz database, so inputs reach the planner and the
/// scripts with something to work on.
/// </summary>
public static class SeedData
{
    /// <summary>A bulk_docs PUT command of <paramref name="document"/> in <paramref name="collection"/>.</summary>
    private static string Put(string id, string collection, object document)
    {
        var json = JsonSerializer.SerializeToNode(document)!.AsObject();
        json["@metadata"] = new JsonObject { ["@collection"] = collection };
        return new JsonObject { ["Type"] = "PUT", ["Id"] = id, ["Document"] = json }.ToJsonString();
    }

    public static void Put(FuzzServer server)
    {
        var commands = new List<string>();
        for (int i = 1; i <= 20; i++)
        {
            commands.Add(Put($"orders/{i}", "Orders", new
            {
                Company = $"companies/{i % 4}",
                Total = i * 10.5,
                Lines = new[] { new { Product = $"products/{i % 3}", Quantity = i, Price = 2.5 } },
                Tags = new[] { "a", $"b{i % 2}" },
                OrderedAt = new DateTime(2024, 1 + i % 9, 10 + i % 10, 10, 0, 0, DateTimeKind.Utc).ToString("o", CultureInfo.InvariantCulture),
                Location = new { Lat = 40 + i * 0.1, Lng = -70 - i * 0.1 },
            }));
            commands.Add(Put($"companies/{i}", "Companies", new { Name = $"Company {i} ltd", Country = i % 2 == 0 ? "UK" : "US", Employees = i * 3 }));
        }
        commands.Add("""{"Type":"Counters","Id":"orders/1","Counters":{"DocumentId":"orders/1","Operations":[{"Type":"Increment","CounterName":"likes","Delta":5}]}}""");
        commands.Add("""{"Type":"TimeSeries","Id":"orders/1","TimeSeries":{"Name":"HeartRate","Appends":[{"Timestamp":"2024-01-01T00:00:00.0000000Z","Values":[70,1],"Tag":"watch"},{"Timestamp":"2024-01-01T00:01:00.0000000Z","Values":[75,2]}],"Deletes":[]}}""");
        FuzzServer.Expect(server.SendToDatabase(HttpMethod.Post, "/bulk_docs", FuzzServer.Json($$"""{"Commands":[{{string.Join(",", commands)}}]}""")), System.Net.HttpStatusCode.Created);
        FuzzServer.Expect(server.SendToDatabase(HttpMethod.Put, "/attachments?id=orders/1&name=file.txt", new ByteArrayContent("hello"u8.ToArray())), System.Net.HttpStatusCode.Created);
        const string index = """
            {"Indexes":[{"Name":"Orders/ByCompany","Maps":["from o in docs.Orders select new { o.Company, Count = 1, Total = o.Total }"],
              "Reduce":"from r in results group r by r.Company into g select new { Company = g.Key, Count = g.Sum(x => x.Count), Total = g.Sum(x => x.Total) }"},
             {"Name":"Companies/Search","Maps":["from c in docs.Companies select new { c.Name, c.Country, c.Employees }"],
              "Fields":{"Name":{"Indexing":"Search","Storage":"Yes","TermVector":"WithPositionsAndOffsets"}}}]}
            """;
        FuzzServer.Expect(server.SendToDatabase(HttpMethod.Put, "/admin/indexes", FuzzServer.Json(index)), System.Net.HttpStatusCode.Created);
    }
}
