using RavenLite.Storage.Trees;

namespace RavenLite.Storage.Transactions;

/// <summary>
/// What one committed transaction left behind: the root tree, the page high-water mark and where
/// the journal continues. Immutable; published by the writer, captured by each transaction at start.
/// </summary>
internal sealed record EnvironmentState(long TxId, TreeHeader RootTree, long NextPage, long JournalFile, long JournalOffset);
