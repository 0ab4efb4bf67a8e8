/// What production refuses in one commit before it reads anything: some pairs of writes to the
/// same document, and a verify without its precondition (docs/documents.md, "Several writes to
/// one document"). Other pairs are applied in order.
extension Write {
    /// A write as the pair rules see it.
    enum SequenceKind: Equatable {
        case upsert, insert, update, delete, deleteExisting, verify

        init(_ write: Write) {
            switch write.operation {
            case .verify: self = .verify
            case .delete: self = write.precondition.exists == true ? .deleteExisting : .delete
            default:
                switch write.precondition.exists {
                case false?: self = .insert
                case true?: self = .update
                case nil: self = write.precondition.updateTime == nil ? .upsert : .update
                }
            }
        }

        var verb: String {
            switch self {
            case .upsert: "upsert"
            case .insert: "insert"
            case .update: "update"
            case .delete, .deleteExisting: "delete"
            case .verify: "verify"
            }
        }
    }

    /// Throws INVALID_ARGUMENT, with production's message, for a sequence of writes one commit
    /// may not hold.
    public static func validateSequence(_ writes: [Write]) throws(FiregateError) {
        guard writes.count > 1 || writes.first?.operation == .verify else { return }
        var last: [ResourcePath: SequenceKind] = [:]
        for write in writes {
            let kind = SequenceKind(write)
            if kind == .verify, write.precondition.isEmpty { throw .invalidArgument("a verify must contain a precondition") }
            if let previous = last[write.path] {
                switch (previous, kind) {
                case (.verify, .verify):
                    throw .invalidArgument("the same document cannot be verified more than once in a single request")
                case (.verify, _):
                    throw .invalidArgument("the same document cannot be verified and then written in a single request")
                case (_, .verify):
                    throw .invalidArgument("the same document cannot be written and then verified in a single request")
                case (.upsert, .insert), (.insert, .insert), (.update, .insert),
                     (.delete, .update), (.deleteExisting, .update), (.delete, .deleteExisting), (.deleteExisting, .deleteExisting):
                    throw .invalidArgument("Cannot \(previous.verb) then \(kind.verb) an entity in the same request.")
                default: break
                }
            }
            last[write.path] = kind
        }
    }
}
