using System.Runtime.InteropServices;
using RavenLite.Storage.Journal;
using RavenLite.Storage.Platform;
using RavenLite.TestKit;
using Xunit.Abstractions;

namespace RavenLite.Storage.Tests.Journal;

/// <summary>docs/reliability.md R4 and R5: journal tail surgery, stale records, missing journals, id gaps.</summary>
public class JournalRecoveryTests(ITestOutputHelper output)
{
    private const int Count = 12;

    [Fact]
    public void Committed_transactions_are_replayed_after_a_crash_without_flush()
    {
        using var fs = JournalTestKit.BuildJournal(Count);
        using (var env = StorageEnvironment.Open(JournalTestKit.NoFlush(JournalTestKit.Clone(fs))))
            Assert.Equal(Count, env.RecoveredTransactions);
        JournalTestKit.AssertPrefix(fs, Count, Count + 2);
    }

    /// <summary>
    /// Copy-on-write copies zero the free gap and diffs journal used bytes only, so recovery's pages differ from the
    /// ones in memory in their gaps. Puts, overwrites and deletes over a small key space (the same pages copied again and
    /// again, removals leaving old bytes in gaps, compactions), a flush part way, then a crash: every key replays to the
    /// value the last commit gave it.
    /// </summary>
    [Fact]
    public void Chains_of_used_bytes_diffs_over_the_same_pages_replay_exactly()
    {
        foreach (int seed in TestSeed.For(3))
        {
            var r = new Random(seed);
            using var mem = new MemoryFileSystem();
            var model = new SortedDictionary<string, byte[]>(StringComparer.Ordinal);
            MemoryFileSystem crashed;
            using (var env = StorageEnvironment.Open(JournalTestKit.NoFlush(mem, journalFileSize: 4 << 20)))
            {
                for (int t = 0; t < 400; t++)
                {
                    using (var tx = env.WriteTransaction())
                    {
                        var tree = tx.CreateTree("t");
                        for (int op = r.Next(1, 12); op > 0; op--)
                        {
                            long k = r.Next(600);
                            string key = System.Text.Encoding.ASCII.GetString(TestData.Key(k));
                            if (r.Next(4) == 0)
                            {
                                tree.Delete(TestData.Key(k));
                                model.Remove(key);
                            }
                            else
                            {
                                // Mostly small values full of zero bytes (the bytes a zeroed gap already holds), some random.
                                var value = r.Next(2) == 0 ? new byte[r.Next(1, 90)] : TestData.Value(r, r.Next(1, 300));
                                value[0] = (byte)t;
                                tree.Put(TestData.Key(k), value);
                                model[key] = value;
                            }
                        }
                        tx.Commit();
                    }
                    if (t == 150)
                        env.Flush();
                }
                crashed = JournalTestKit.Clone(mem);
            }
            using (crashed)
            using (var env = StorageEnvironment.Open(JournalTestKit.NoFlush(crashed, journalFileSize: 4 << 20)))
            {
                Assert.True(env.RecoveredTransactions > 0);
                using var tx = env.ReadTransaction();
                var tree = tx.ReadTree("t")!;
                foreach (var (key, value) in model)
                {
                    Assert.True(tree.TryGet(System.Text.Encoding.ASCII.GetBytes(key), out var got), $"seed {seed}: key {key} lost");
                    Assert.Equal(value, got.ToArray());
                }
                Assert.Equal(model.Count, tree.Header.EntryCount);
            }
        }
    }

    [Fact]
    public void Large_incompressible_transactions_are_stored_raw_compressible_ones_as_LZ4_and_both_replay()
    {
        // 60,000 values of 100 random bytes (≈7 MB of pages: LZ4 cannot shrink them by a fifth) in one
        // transaction, then 60,000 values of one repeated byte (compressible) in the next.
        using var live = new MemoryFileSystem();
        MemoryFileSystem mem; // the files as a killed process leaves them (copied before the environment closes)
        var random = new Random(5);
        var values = new[] { new byte[60_000][], new byte[60_000][] };
        using (var env = StorageEnvironment.Open(JournalTestKit.NoFlush(live, journalFileSize: 64L << 20)))
        {
            for (int round = 0; round < 2; round++)
            {
                using var tx = env.WriteTransaction();
                var t = tx.CreateTree("r" + round);
                for (int i = 0; i < values[round].Length; i++)
                {
                    var v = values[round][i] = new byte[100];
                    if (round == 0)
                        random.NextBytes(v);
                    else
                        Array.Fill(v, (byte)(i % 7));
                    t.Put(TestData.Key(i), v);
                }
                tx.Commit();
            }
            mem = JournalTestKit.Clone(live);
        }
        using var killed = mem;
        var journal = mem.ReadAllBytes(JournalTestKit.FirstJournal);
        var headers = JournalTestKit.Records(journal).Select(r => MemoryMarshal.Read<JournalRecordHeader>(journal.AsSpan(r.Offset))).ToList();
        var stored = headers.Single(h => h.UncompressedSize > 4 << 20 && h.TxId == headers.Max(x => x.TxId) - 1);
        var packed = headers.Single(h => h.TxId == headers.Max(x => x.TxId));
        Assert.Equal(JournalRecordFlags.Stored, stored.Flags);
        Assert.Equal(stored.UncompressedSize, stored.CompressedSize);
        Assert.Equal(JournalRecordFlags.None, packed.Flags);
        Assert.True(packed.CompressedSize * 4 < packed.UncompressedSize, $"compressible record {packed.CompressedSize} of {packed.UncompressedSize} bytes");
        output.WriteLine($"stored record {stored.CompressedSize:N0} bytes; LZ4 record {packed.CompressedSize:N0} of {packed.UncompressedSize:N0}");

        // Nothing was flushed: reopening replays both records from the journal.
        using (var copy = JournalTestKit.Clone(mem))
        using (var env = StorageEnvironment.Open(JournalTestKit.NoFlush(copy, journalFileSize: 64L << 20)))
        using (var r = env.ReadTransaction())
        {
            Assert.Equal(2, env.RecoveredTransactions);
            for (int round = 0; round < 2; round++)
            {
                var t = r.ReadTree("r" + round)!;
                Assert.Equal(values[round].Length, t.Count);
                for (int i = 0; i < values[round].Length; i += 997)
                {
                    Assert.True(t.TryGet(TestData.Key(i), out var v));
                    Assert.True(v.SequenceEqual(values[round][i]), $"round {round} value {i}");
                }
            }
        }

        // A flipped bit inside the stored payload fails its checksum: that (last-but-one) record is not applied, and
        // since a valid record follows it, the journal refuses to open rather than skip it.
        int storedOffset = JournalTestKit.Records(journal).Single(r => r.TxId == stored.TxId).Offset;
        using var flipped = JournalTestKit.Clone(mem, (path, bytes) =>
        {
            if (path != JournalTestKit.FirstJournal)
                return bytes;
            var b = (byte[])bytes.Clone();
            b[storedOffset + JournalRecordHeader.SizeOf + stored.CompressedSize / 2] ^= 0x10;
            return b;
        });
        var e = Assert.ThrowsAny<Exception>(() => StorageEnvironment.Open(JournalTestKit.NoFlush(flipped, journalFileSize: 64L << 20)).Dispose());
        Assert.Contains("checksum", e.Message, StringComparison.OrdinalIgnoreCase);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void Truncating_the_journal_at_every_byte_of_the_last_records_recovers_the_exact_valid_prefix(bool encrypted)
    {
        using var key = encrypted ? Encryption.EncryptedEnvironmentTests.NewKey(out _) : null;
        using var fs = JournalTestKit.BuildJournal(Count, key: key);
        var journal = fs.ReadAllBytes(JournalTestKit.FirstJournal);
        var records = JournalTestKit.Records(journal);
        Assert.Equal(Count, records.Count);
        int from = records[^3].Offset;
        int end = records[^1].Offset + records[^1].Length;
        int points = 0;
        for (int cut = from; cut <= end; cut++)
        {
            bool zeroFill = cut % 2 == 0; // half the cuts keep the preallocated length, half shorten the file
            // A record survives if the cut removed none of its bytes (zero-filling bytes that were already zero changes nothing).
            int expected = records.Count(r => r.Offset + r.Length <= cut
                || (zeroFill && journal.AsSpan(cut, r.Offset + r.Length - cut).IndexOfAnyExcept((byte)0) < 0));
            using var copy = JournalTestKit.Clone(fs, (path, bytes) =>
            {
                if (path != JournalTestKit.FirstJournal)
                    return bytes;
                if (!zeroFill)
                    return bytes[..cut];
                var z = (byte[])bytes.Clone();
                Array.Clear(z, cut, z.Length - cut);
                return z;
            });
            JournalTestKit.AssertPrefix(copy, expected, Count, key);
            points++;
        }
        output.WriteLine($"truncation points explored: {points}");
        Assert.True(points > 300);
    }

    [Fact]
    public void A_flipped_bit_in_the_last_record_drops_only_that_record()
    {
        using var fs = JournalTestKit.BuildJournal(Count);
        var journal = fs.ReadAllBytes(JournalTestKit.FirstJournal);
        var last = JournalTestKit.Records(journal)[^1];
        for (int bit = 0; bit < last.Length * 8; bit += 7)
        {
            using var copy = JournalTestKit.Clone(fs, (path, bytes) =>
            {
                if (path == JournalTestKit.FirstJournal)
                    bytes[last.Offset + bit / 8] ^= (byte)(1 << (bit % 8));
                return bytes;
            });
            JournalTestKit.AssertPrefix(copy, Count - 1, Count);
        }
    }

    [Fact]
    public void A_flipped_bit_in_a_middle_record_refuses_to_open_naming_file_and_offset()
    {
        using var fs = JournalTestKit.BuildJournal(Count);
        var journal = fs.ReadAllBytes(JournalTestKit.FirstJournal);
        var victim = JournalTestKit.Records(journal)[Count - 4];
        var r = new Random(17);
        for (int n = 0; n < 60; n++)
        {
            int bit = r.Next(victim.Length * 8);
            using var copy = JournalTestKit.Clone(fs, (path, bytes) =>
            {
                if (path == JournalTestKit.FirstJournal)
                    bytes[victim.Offset + bit / 8] ^= (byte)(1 << (bit % 8));
                return bytes;
            });
            var e = Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(JournalTestKit.NoFlush(copy)).Dispose());
            Assert.Contains("0000000000000000001.journal", e.Message, StringComparison.Ordinal);
            Assert.Contains($"offset {victim.Offset}", e.Message, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void Zeroed_4KB_runs_recover_a_prefix_or_refuse_when_valid_records_follow()
    {
        using var fs = JournalTestKit.BuildJournal(40);
        var journal = fs.ReadAllBytes(JournalTestKit.FirstJournal);
        var records = JournalTestKit.Records(journal);
        int end = records[^1].Offset + records[^1].Length;
        for (int start = 0; start < end; start += 509)
        {
            int zEnd = start + 4096;
            int firstHit = records.FindIndex(x => x.Offset + x.Length > start && x.Offset < zEnd);
            bool laterIntact = records.Skip(firstHit + 1).Any(x => x.Offset >= zEnd);
            using var copy = JournalTestKit.Clone(fs, (path, bytes) =>
            {
                if (path == JournalTestKit.FirstJournal)
                    Array.Clear(bytes, start, Math.Min(4096, bytes.Length - start));
                return bytes;
            });
            if (laterIntact)
                Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(JournalTestKit.NoFlush(copy)).Dispose());
            else
                JournalTestKit.AssertPrefix(copy, firstHit, 40);
        }
    }

    [Fact]
    public void A_stale_record_spliced_after_the_tail_is_never_applied()
    {
        using var fs = JournalTestKit.BuildJournal(Count);
        var journal = fs.ReadAllBytes(JournalTestKit.FirstJournal);
        var records = JournalTestKit.Records(journal);
        int end = records[^1].Offset + records[^1].Length;
        foreach (int staleIndex in new[] { 0, 3, Count - 2 })
        {
            var stale = records[staleIndex];
            using var copy = JournalTestKit.Clone(fs, (path, bytes) =>
            {
                if (path == JournalTestKit.FirstJournal)
                    Array.Copy(bytes, stale.Offset, bytes, end, stale.Length);
                return bytes;
            });
            JournalTestKit.AssertPrefix(copy, Count, Count);
        }
    }

    [Fact]
    public void A_missing_record_is_a_tx_id_gap_and_refuses_to_open()
    {
        using var fs = JournalTestKit.BuildJournal(Count);
        var journal = fs.ReadAllBytes(JournalTestKit.FirstJournal);
        var gone = JournalTestKit.Records(journal)[5];
        using var copy = JournalTestKit.Clone(fs, (path, bytes) =>
        {
            if (path != JournalTestKit.FirstJournal)
                return bytes;
            var spliced = new byte[bytes.Length];
            Array.Copy(bytes, 0, spliced, 0, gone.Offset);
            Array.Copy(bytes, gone.Offset + gone.Length, spliced, gone.Offset, bytes.Length - gone.Offset - gone.Length);
            return spliced;
        });
        var e = Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(JournalTestKit.NoFlush(copy)).Dispose());
        Assert.Contains("transaction 6", e.Message, StringComparison.Ordinal);
        Assert.Contains("transaction 7", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void A_deleted_middle_journal_refuses_to_open_naming_the_missing_file()
    {
        using var fs = JournalTestKit.BuildJournal(1500, journalFileSize: 64 * 1024);
        var journals = fs.AllFiles.Where(f => f.EndsWith(".journal", StringComparison.Ordinal)).Order(StringComparer.Ordinal).ToList();
        Assert.True(journals.Count >= 3, $"expected several journal files, got {journals.Count}");
        JournalTestKit.AssertPrefix(JournalTestKit.Clone(fs), 1500, 1500);
        using var copy = JournalTestKit.Clone(fs, (path, bytes) => path == journals[1] ? null : bytes);
        var e = Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(JournalTestKit.NoFlush(copy)).Dispose());
        Assert.Contains("0000000000000000002.journal", e.Message, StringComparison.Ordinal);
        Assert.Contains("missing", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Recycled_journal_files_with_stale_records_recover_correctly()
    {
        using var mem = new MemoryFileSystem();
        var options = new StorageOptions
        {
            Directory = "/mem", FileSystem = mem, BackgroundFlush = false, JournalFileSize = 64 * 1024, MaxRecycledJournals = 2, InitialMapSize = 1L << 30,
        };
        using var env = StorageEnvironment.Open(options);
        for (int i = 0; i < 3000; i++)
        {
            using (var tx = env.WriteTransaction())
            {
                tx.CreateTree("t").Put(TestData.Key(i), JournalTestKit.ValueFor(i));
                tx.Commit();
            }
            if (i % 397 == 50)
                env.Flush();
        }
        var names = mem.AllFiles.Select(Path.GetFileName).ToList();
        long highest = names.Where(n => n!.EndsWith(".journal", StringComparison.Ordinal)).Max(n => long.Parse(n![..19], System.Globalization.CultureInfo.InvariantCulture));
        Assert.True(highest >= 4, $"journal numbers reached only {highest}");
        Assert.True(names.Count(n => n!.EndsWith(".journal", StringComparison.Ordinal)) < highest, "no journal file was recycled");
        using var crashed = JournalTestKit.Clone(mem);
        JournalTestKit.AssertPrefix(crashed, 3000, 3000);
    }

    [Fact]
    public void Header_with_both_copies_corrupt_refuses_to_open()
    {
        using var fs = JournalTestKit.BuildJournal(3);
        using var copy = JournalTestKit.Clone(fs, (path, bytes) =>
        {
            if (path.EndsWith("/headers", StringComparison.Ordinal))
            {
                bytes[10] ^= 0xFF;
                bytes[4096 + 10] ^= 0xFF;
            }
            return bytes;
        });
        var e = Assert.Throws<StorageCorruptionException>(() => StorageEnvironment.Open(JournalTestKit.NoFlush(copy)).Dispose());
        Assert.Contains("headers", e.Message, StringComparison.Ordinal);
    }
}
