using RavenLite.Client.Operations;

namespace RavenLite.Client.Tests.Session;

public sealed class SessionTests(DriverFixture fixture) : IClassFixture<DriverFixture>
{
    [Fact]
    public async Task Store_assigns_hilo_ids_and_load_returns_the_same_instance_within_a_session()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var alice = new User { Name = "Alice", Age = 30 };
        var bob = new User { Name = "Bob", Age = 40 };
        var acme = new Company { Name = "Acme" };
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(alice);
            await s.StoreAsync(bob);
            await s.StoreAsync(acme);
            Assert.Matches(@"^users/\d+-A$", alice.Id);
            Assert.Matches(@"^companies/\d+-A$", acme.Id);
            Assert.NotEqual(alice.Id, bob.Id);
            Assert.Same(alice, await s.LoadAsync<User>(alice.Id!)); // identity map: no request, same instance
            Assert.Equal(0, s.Advanced.NumberOfRequests);
            await s.SaveChangesAsync();
            Assert.Equal(1, s.Advanced.NumberOfRequests);
        }
        using (var s = store.OpenAsyncSession())
        {
            var loaded = await s.LoadAsync<User>(alice.Id!);
            Assert.NotNull(loaded);
            Assert.Equal("Alice", loaded.Name);
            Assert.Equal(alice.Id, loaded.Id);
            Assert.Same(loaded, await s.LoadAsync<User>(alice.Id!.ToUpperInvariant())); // ids are case-insensitive
            Assert.Equal(1, s.Advanced.NumberOfRequests);
            Assert.Null(await s.LoadAsync<User>("users/does-not-exist"));
        }
        var stats = await store.Maintenance.SendAsync(new GetStatisticsOperation());
        Assert.Equal(3 + 2, stats.CountOfDocuments); // + the two HiLo documents
    }

    [Fact]
    public async Task Explicit_ids_multi_load_with_missing_and_the_sync_session()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenSession())
        {
            s.Store(new User { Name = "A" }, "people/a");
            s.Store(new User { Id = "people/b", Name = "B" });
            s.SaveChanges();
        }
        using (var s = store.OpenSession())
        {
            var all = s.Load<User>(["people/a", "people/missing", "people/b"]);
            Assert.Equal(3, all.Count);
            Assert.Equal("A", all["people/a"]!.Name);
            Assert.Null(all["people/missing"]);
            Assert.Equal("people/b", all["people/b"]!.Id);
            Assert.Equal(1, s.Advanced.NumberOfRequests);
        }
    }

    [Fact]
    public async Task Many_ids_go_through_the_post_form_of_load()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var ids = Enumerable.Range(0, 200).Select(i => $"categories/{i:D5}-with-a-fairly-long-suffix").ToList();
        using (var s = store.OpenAsyncSession())
        {
            foreach (string id in ids)
                await s.StoreAsync(new Category { Title = id }, id);
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var all = await s.LoadAsync<Category>(ids);
            Assert.All(ids, id => Assert.Equal(id, all[id]!.Title));
            Assert.Equal(1, s.Advanced.NumberOfRequests);
        }
    }

    [Fact]
    public async Task Include_brings_the_referenced_document_so_loading_it_needs_no_request()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            var c = new Company { Name = "Initech" };
            await s.StoreAsync(c, "companies/initech");
            await s.StoreAsync(new User { Name = "Peter", CompanyId = c.Id }, "users/peter");
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var peter = await s.Include(nameof(User.CompanyId)).LoadAsync<User>("users/peter");
            Assert.Equal(1, s.Advanced.NumberOfRequests);
            var company = await s.LoadAsync<Company>(peter!.CompanyId!);
            Assert.Equal("Initech", company!.Name);
            Assert.Equal(1, s.Advanced.NumberOfRequests);
        }
    }

    [Fact]
    public async Task Only_changed_documents_are_sent_and_unchanged_sessions_send_nothing()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            for (int i = 0; i < 3; i++)
                await s.StoreAsync(new User { Name = "U" + i, Age = i }, "users/" + i);
            await s.SaveChangesAsync();
        }
        long etagBefore = (await store.Maintenance.SendAsync(new GetStatisticsOperation())).LastDocEtag;
        using (var s = store.OpenAsyncSession())
        {
            var all = await s.LoadAsync<User>(["users/0", "users/1", "users/2"]);
            Assert.False(s.Advanced.HasChanges);
            await s.SaveChangesAsync(); // nothing changed: no request
            Assert.Equal(1, s.Advanced.NumberOfRequests);
            all["users/1"]!.Age = 99;
            Assert.True(s.Advanced.HasChanged(all["users/1"]!));
            Assert.False(s.Advanced.HasChanged(all["users/0"]!));
            await s.SaveChangesAsync();
            Assert.Equal(2, s.Advanced.NumberOfRequests);
            Assert.False(s.Advanced.HasChanges);
        }
        // Exactly one document was written: the etag moved by one.
        long etagAfter = (await store.Maintenance.SendAsync(new GetStatisticsOperation())).LastDocEtag;
        Assert.Equal(etagBefore + 1, etagAfter);
        using (var s = store.OpenAsyncSession())
            Assert.Equal(99, (await s.LoadAsync<User>("users/1"))!.Age);
    }

    [Fact]
    public async Task Delete_by_entity_and_by_id_in_one_save()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "x" }, "users/x");
            await s.StoreAsync(new User { Name = "y" }, "users/y");
            await s.StoreAsync(new User { Name = "z" }, "users/z");
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var x = await s.LoadAsync<User>("users/x");
            s.Delete(x);
            s.Delete("users/y");
            Assert.Null(await s.LoadAsync<User>("users/y")); // deleted in this session
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var left = await s.LoadAsync<User>(["users/x", "users/y", "users/z"]);
            Assert.Null(left["users/x"]);
            Assert.Null(left["users/y"]);
            Assert.NotNull(left["users/z"]);
        }
    }

    [Fact]
    public async Task Metadata_and_change_vector_are_readable_and_custom_metadata_round_trips()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        string? cv1;
        using (var s = store.OpenAsyncSession())
        {
            var u = new User { Name = "Meta" };
            await s.StoreAsync(u, "users/meta");
            s.Advanced.GetMetadataFor(u)["Owner"] = "tests";
            Assert.Null(s.Advanced.GetChangeVectorFor(u));
            await s.SaveChangesAsync();
            cv1 = s.Advanced.GetChangeVectorFor(u);
            Assert.StartsWith("A:", cv1);
            Assert.Equal("users/meta", s.Advanced.GetDocumentId(u));
        }
        using (var s = store.OpenAsyncSession())
        {
            var u = await s.LoadAsync<User>("users/meta");
            var meta = s.Advanced.GetMetadataFor(u!);
            Assert.Equal("Users", (string?)meta["@collection"]);
            Assert.Equal("tests", (string?)meta["Owner"]);
            Assert.Contains("RavenLite.Client.Tests.User", (string?)meta["Raven-Clr-Type"], StringComparison.Ordinal);
            Assert.Equal(cv1, s.Advanced.GetChangeVectorFor(u!));
            Assert.False(string.IsNullOrEmpty((string?)meta["@last-modified"]));
            meta["Owner"] = "changed"; // a metadata-only change is a change
            Assert.True(s.Advanced.HasChanges);
            await s.SaveChangesAsync();
            Assert.NotEqual(cv1, s.Advanced.GetChangeVectorFor(u!));
        }
    }

    [Fact]
    public async Task Evict_and_Clear_forget_tracked_entities()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using (var s = store.OpenAsyncSession())
        {
            await s.StoreAsync(new User { Name = "E" }, "users/e");
            await s.SaveChangesAsync();
        }
        using (var s = store.OpenAsyncSession())
        {
            var first = await s.LoadAsync<User>("users/e");
            first!.Name = "changed but evicted";
            s.Advanced.Evict(first);
            Assert.False(s.Advanced.IsLoaded("users/e"));
            Assert.False(s.Advanced.HasChanges);
            var again = await s.LoadAsync<User>("users/e");
            Assert.NotSame(first, again);
            Assert.Equal("E", again!.Name);
            s.Advanced.Clear();
            Assert.False(s.Advanced.IsLoaded("users/e"));
            Assert.Equal(2, s.Advanced.NumberOfRequests);
        }
    }

    [Fact]
    public async Task The_request_guard_stops_a_chatty_session_with_an_actionable_message()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using var s = store.OpenAsyncSession();
        s.Advanced.MaxNumberOfRequestsPerSession = 3;
        for (int i = 0; i < 3; i++)
            await s.LoadAsync<User>("users/none-" + i);
        var e = await Assert.ThrowsAsync<InvalidOperationException>(() => s.LoadAsync<User>("users/none-3"));
        Assert.Contains("MaxNumberOfRequestsPerSession", e.Message, StringComparison.Ordinal);
        Assert.Contains("Include", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task A_second_entity_under_a_tracked_id_is_refused()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        using var s = store.OpenAsyncSession();
        await s.StoreAsync(new User { Name = "one" }, "users/dup");
        await Assert.ThrowsAsync<InvalidOperationException>(() => s.StoreAsync(new User { Name = "two" }, "users/dup"));
    }

    [Fact]
    public async Task Stores_are_thread_safe_sessions_from_many_tasks_get_distinct_ids()
    {
        var store = await fixture.Driver.GetDocumentStoreAsync();
        var ids = new System.Collections.Concurrent.ConcurrentBag<string>();
        await Task.WhenAll(Enumerable.Range(0, 8).Select(_ => Task.Run(async () =>
        {
            using var s = store.OpenAsyncSession();
            for (int i = 0; i < 50; i++)
            {
                var u = new User { Name = "p" };
                await s.StoreAsync(u);
                ids.Add(u.Id!);
            }
            await s.SaveChangesAsync();
        })));
        Assert.Equal(400, ids.Distinct().Count());
        var stats = await store.Maintenance.SendAsync(new GetStatisticsOperation());
        Assert.Equal(401, stats.CountOfDocuments); // + HiLo document
    }

    [Fact]
    public async Task HiLo_generators_of_several_stores_share_no_id_and_a_client_written_hilo_document_keeps_its_fields()
    {
        var first = await fixture.Driver.GetDocumentStoreAsync();
        // A client may write the HiLo document itself (RavenDB's clients and tests do); the generator raises Max
        // and leaves the rest of it alone, and the client may write it again (no "via update is not supported").
        using (var s = first.OpenAsyncSession())
        {
            await s.StoreAsync(new HiLoState { Max = 100, Note = "seeded" }, "Raven/Hilo/users");
            await s.SaveChangesAsync();
        }
        using var second = new DocumentStore { Urls = [fixture.Driver.Url.ToString().TrimEnd('/')], Database = first.Database }.Initialize();
        var ids = new System.Collections.Concurrent.ConcurrentBag<string>();
        await Task.WhenAll(new[] { first, second }.SelectMany(store => Enumerable.Range(0, 4).Select(_ => Task.Run(async () =>
        {
            for (int i = 0; i < 40; i++)
            {
                using var s = store.OpenAsyncSession();
                var u = new User { Name = "h" };
                await s.StoreAsync(u);
                await s.SaveChangesAsync();
                ids.Add(u.Id!);
            }
        }))));
        Assert.Equal(320, ids.Distinct().Count());
        Assert.All(ids, id => Assert.True(int.Parse(id.Split('/', '-')[1], System.Globalization.CultureInfo.InvariantCulture) > 100, id));
        using (var s = first.OpenAsyncSession())
        {
            var state = await s.LoadAsync<HiLoState>("Raven/Hilo/users");
            Assert.NotNull(state);
            Assert.Equal("seeded", state.Note);
            Assert.True(state.Max >= 420, $"Max {state.Max}");
            state.Note = "rewritten";
            await s.SaveChangesAsync();
        }
        using (var s = first.OpenAsyncSession())
            Assert.Equal("rewritten", (await s.LoadAsync<HiLoState>("Raven/Hilo/users"))!.Note);
        var stats = await first.Maintenance.SendAsync(new GetStatisticsOperation());
        Assert.Equal(321, stats.CountOfDocuments);
    }

    private sealed class HiLoState
    {
        public long Max { get; set; }
        public string? Note { get; set; }
    }
}
