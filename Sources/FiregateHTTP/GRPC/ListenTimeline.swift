import FiregateBackend
import FiregateModel
import FiregateProto

/// What a Listen stream (gRPC or WebChannel) tells its client, as timeline steps
/// (docs/timeline.md): a target added or removed, and at each consistent snapshot (the global
/// NO_CHANGE the SDKs raise events on) the documents changed since the last one.
struct ListenTimeline {
    let recorder: TimelineRecorder
    private var changed: [(String, String)] = []

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
                    let changes = changed
                    changed = []
                    recorder.snapshot("stream", fromCache: false, hasPendingWrites: nil, documents: nil, changes: changes,
                                      extra: [("readTime", .string(Timestamp(proto: change.readTime).rfc3339))])
                default:
                    break
                }
            case .documentChange(let change)?: changed.append(("changed", ListenTimeline.path(change.document.name)))
            case .documentDelete(let delete)?: changed.append(("removed", ListenTimeline.path(delete.document)))
            case .documentRemove(let remove)?: changed.append(("removed", ListenTimeline.path(remove.document)))
            default: break
            }
        }
    }

    /// `cities/SF` of `projects/p/databases/d/documents/cities/SF`.
    static func path(_ name: String) -> String {
        guard let range = name.range(of: "/documents/") else { return name }
        return String(name[range.upperBound...])
    }
}
