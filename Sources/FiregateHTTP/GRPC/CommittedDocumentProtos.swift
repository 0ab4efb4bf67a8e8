import FiregateModel
import FiregateProto
import Synchronization

/// Documents as protobuf messages, built once per commit and shared by every Listen stream the
/// commit reaches (a thousand streams on one document would otherwise convert it a thousand
/// times). A database's state at a commit sequence is fixed, so (database, sequence, path) names
/// one version; the cache keeps only recent ones.
final class CommittedDocumentProtos: Sendable {
    static let shared = CommittedDocumentProtos()

    private struct Key: Hashable {
        let database: DatabaseID
        let sequence: Int64
        let path: ResourcePath
    }

    private static let capacity = 512
    private let entries = Mutex<[Key: Google_Firestore_V1_Document]>([:])

    /// `document` (the version at `sequence` in `database`) as a message, whole (no mask).
    func proto(_ document: Document, database: DatabaseID, sequence: Int64) -> Google_Firestore_V1_Document {
        let key = Key(database: database, sequence: sequence, path: document.path)
        if let cached = entries.withLock({ $0[key] }) { return cached }
        let built = document.proto(database: database, mask: nil)
        entries.withLock { entries in
            if entries.count >= CommittedDocumentProtos.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = built
        }
        return built
    }
}
