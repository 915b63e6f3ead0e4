using System.Runtime.InteropServices;
using RavenLite.Storage.Journal;
using RavenLite.Storage.Paging;
using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Tests.Format;

/// <summary>Freezes the on-disk format (docs/conventions.md §4): sizes, offsets and persisted enum values may only grow; changing one needs a format-version bump.</summary>
public class FormatTests
{
    private static int Offset<T>(string field) => (int)Marshal.OffsetOf<T>(field);

    [Fact]
    public void Constants_are_frozen()
    {
        Assert.Equal(3, StorageConstants.FormatVersion); // 2: journal entries may be page diffs; 3: pages carry checksums
        Assert.Equal(2, StorageConstants.OldestFormatVersion);
        Assert.Equal(8192, StorageConstants.PageSize);
        Assert.Equal(1024, StorageConstants.MaxKeySize);
        Assert.Equal(2038, StorageConstants.MaxNodeSize);
        Assert.Equal(0x5244414548_4C5652UL, FileHeader.MagicValue);
        Assert.Equal("RVLHEADR"u8.ToArray(), BitConverter.GetBytes(FileHeader.MagicValue));
        Assert.Equal("RVLJRNL1"u8.ToArray(), BitConverter.GetBytes(JournalRecordHeader.MagicValue));
    }

    [Fact]
    public void PageHeader_layout()
    {
        Assert.Equal(32, PageHeader.SizeOf);
        Assert.Equal(32, Marshal.SizeOf<PageHeader>());
        Assert.Equal(0, Offset<PageHeader>(nameof(PageHeader.PageNumber)));
        Assert.Equal(8, Offset<PageHeader>(nameof(PageHeader.Flags)));
        Assert.Equal(10, Offset<PageHeader>(nameof(PageHeader.NumberOfEntries)));
        Assert.Equal(12, Offset<PageHeader>(nameof(PageHeader.Lower)));
        Assert.Equal(14, Offset<PageHeader>(nameof(PageHeader.Upper)));
        Assert.Equal(16, Offset<PageHeader>(nameof(PageHeader.OverflowSize)));
        Assert.Equal(24, Offset<PageHeader>(nameof(PageHeader.Checksum)));
    }

    [Fact]
    public void NodeHeader_and_TreeHeader_layout()
    {
        Assert.Equal(8, Marshal.SizeOf<NodeHeader>());
        Assert.Equal(0, Offset<NodeHeader>(nameof(NodeHeader.KeySize)));
        Assert.Equal(2, Offset<NodeHeader>(nameof(NodeHeader.Flags)));
        Assert.Equal(3, Offset<NodeHeader>(nameof(NodeHeader.Reserved)));
        Assert.Equal(4, Offset<NodeHeader>(nameof(NodeHeader.DataSize)));
        Assert.Equal(48, Marshal.SizeOf<TreeHeader>());
        Assert.Equal(0, Offset<TreeHeader>(nameof(TreeHeader.RootPage)));
        Assert.Equal(8, Offset<TreeHeader>(nameof(TreeHeader.EntryCount)));
        Assert.Equal(16, Offset<TreeHeader>(nameof(TreeHeader.BranchPages)));
        Assert.Equal(24, Offset<TreeHeader>(nameof(TreeHeader.LeafPages)));
        Assert.Equal(32, Offset<TreeHeader>(nameof(TreeHeader.OverflowPages)));
        Assert.Equal(40, Offset<TreeHeader>(nameof(TreeHeader.Depth)));
        Assert.Equal(44, Offset<TreeHeader>(nameof(TreeHeader.Reserved)));
    }

    [Fact]
    public void FileHeader_layout()
    {
        Assert.Equal(128, FileHeader.SizeOf);
        Assert.Equal(128, Marshal.SizeOf<FileHeader>());
        Assert.Equal(0, Offset<FileHeader>(nameof(FileHeader.Magic)));
        Assert.Equal(8, Offset<FileHeader>(nameof(FileHeader.FormatVersion)));
        Assert.Equal(12, Offset<FileHeader>(nameof(FileHeader.PageSize)));
        Assert.Equal(16, Offset<FileHeader>(nameof(FileHeader.Sequence)));
        Assert.Equal(24, Offset<FileHeader>(nameof(FileHeader.LastSyncedTxId)));
        Assert.Equal(32, Offset<FileHeader>(nameof(FileHeader.NextPage)));
        Assert.Equal(40, Offset<FileHeader>(nameof(FileHeader.JournalFileNumber)));
        Assert.Equal(48, Offset<FileHeader>(nameof(FileHeader.JournalOffset)));
        Assert.Equal(56, Offset<FileHeader>(nameof(FileHeader.RootTree)));
        Assert.Equal(104, Offset<FileHeader>(nameof(FileHeader.KeyCheck)));
        Assert.Equal(16, Marshal.SizeOf<KeyCheckValue>());
        Assert.Equal(120, Offset<FileHeader>(nameof(FileHeader.Hash)));
        Assert.Equal(4096, HeaderFile.SlotSize);
    }

    [Fact]
    public void JournalRecordHeader_layout()
    {
        Assert.Equal(128, JournalRecordHeader.SizeOf);
        Assert.Equal(128, Marshal.SizeOf<JournalRecordHeader>());
        Assert.Equal(0, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.Magic)));
        Assert.Equal(8, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.TxId)));
        Assert.Equal(16, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.PageCount)));
        Assert.Equal(20, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.EntryCount)));
        Assert.Equal(24, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.CompressedSize)));
        Assert.Equal(28, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.UncompressedSize)));
        Assert.Equal(32, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.Flags)));
        Assert.Equal(36, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.Reserved)));
        Assert.Equal(40, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.NextPage)));
        Assert.Equal(48, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.RootTree)));
        Assert.Equal(96, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.Nonce)));
        Assert.Equal(24, Marshal.SizeOf<JournalNonce>());
        Assert.Equal(120, Offset<JournalRecordHeader>(nameof(JournalRecordHeader.Hash)));
        Assert.Equal(24, Marshal.SizeOf<JournalPageEntry>());
        Assert.Equal(0, Offset<JournalPageEntry>(nameof(JournalPageEntry.PageNumber)));
        Assert.Equal(8, Offset<JournalPageEntry>(nameof(JournalPageEntry.PageCount)));
        Assert.Equal(12, Offset<JournalPageEntry>(nameof(JournalPageEntry.DiffSize)));
        Assert.Equal(16, Offset<JournalPageEntry>(nameof(JournalPageEntry.BasePage)));
    }

    [Fact]
    public void Persisted_enum_values_are_frozen()
    {
        Assert.Equal(1, (int)PageFlags.Branch);
        Assert.Equal(2, (int)PageFlags.Leaf);
        Assert.Equal(4, (int)PageFlags.Overflow);
        Assert.Equal(0, (int)NodeFlags.Data);
        Assert.Equal(1, (int)NodeFlags.Overflow);
        Assert.Equal(2, (int)NodeFlags.Branch);
        Assert.Equal(0u, (uint)JournalRecordFlags.None);
        Assert.Equal(1u, (uint)JournalRecordFlags.Stored);
        Assert.Equal(2u, (uint)JournalRecordFlags.Encrypted);
        Assert.Equal(0, (int)DurabilityMode.Sync);
        Assert.Equal(1, (int)DurabilityMode.Buffered);
        Assert.Equal(2, (int)DurabilityMode.None);
    }
}
