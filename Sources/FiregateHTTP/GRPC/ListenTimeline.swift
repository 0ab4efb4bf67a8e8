import FiregateBackend
import FiregateModel
import FiregateProto

/// What a Listen stream (gRPC or WebChannel) tells its client, as timeline steps
/// (docs/timeline.md): a target added or removed, and at each consistent snapshot (the global
/// NO_CHANGE the SDKs raise events on) the documents changed since the last one. The snapshot's
/// time is the server's as it is sent (its read time is in the stream, not repeated here).
struct ListenTimeline {
    let recorder: TimelineRecorder
    private var changes = 0
    private var changed: [TimelineChange] = []

    init(_ recorder: TimelineRecorder) {
        self.recorder = recorder
    }

    mutating func observe(_ responses: [ListenResponse]) {
        for response in responses {
            switch response.responseType {
            case .targetChange(let change)?:
                switch change.targetChangeType {
                case .remove:
                    for id in change.targetIds {
                        recorder.listenClosed(String(id), reason: change.hasCause ? change.cause.message : nil)
                    }
                case .noChange where change.targetIds.isEmpty:
                    recorder.snapshot("stream", fromCache: false, hasPendingWrites: nil, documents: nil, changes: changes, changed: changed)
                    changes = 0
                    changed = []
                default:
                    break
                }
            case .documentChange(let change)?: note("changed", change.document.name)
            case .documentDelete(let delete)?: note("removed", delete.document)
            case .documentRemove(let remove)?: note("removed", remove.document)
            default: break
            }
        }
    }

    /// Counts a changed document; the first ones are listed.
    private mutating func note(_ type: String, _ name: String) {
        changes += 1
        if changed.count < TimelineEvent.listedChanges { changed.append(TimelineChange(type, ListenTimeline.path(name))) }
    }

    /// `cities/SF` of `projects/p/databases/d/documents/cities/SF`.
    static func path(_ name: String) -> String {
        // A byte search: Foundation's `range(of:)` cost a fan-out more than the rest of the step.
        let bytes = Array(name.utf8), marker = Array("/documents/".utf8)
        guard bytes.count >= marker.count else { return name }
        for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] && bytes[start..<start + marker.count].elementsEqual(marker) {
            return String(decoding: bytes[(start + marker.count)...], as: UTF8.self)
        }
        return name
    }
}
