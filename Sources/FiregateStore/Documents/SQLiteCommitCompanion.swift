import GRDB

/// A `CommitCompanion` for `SQLiteDocumentStorage`: SQL run in the commit's transaction of the
/// same `SQLiteStore`.
public struct SQLiteCommitCompanion: CommitCompanion {
    let store: SQLiteStore
    let work: GroupCommitter.Work

    public init(store: SQLiteStore, work: @escaping GroupCommitter.Work) {
        self.store = store
        self.work = work
    }

    public func enqueueAlone() {
        store.committer.enqueue(work) { _ in }
    }
}

/// A companion handed to a storage that cannot run it in its transaction.
struct UnsupportedCommitCompanion: Error, CustomStringConvertible {
    let companion: any CommitCompanion
    var description: String { "\(type(of: companion)) cannot run in this storage's transaction" }
}
