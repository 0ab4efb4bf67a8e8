import FiregateModel

/// A local query's answer and what it cost.
public struct QueryExecution: Sendable {
    public enum Plan: String, Sendable {
        case index, scan
    }

    public let documents: [LocalDocument]
    public let plan: Plan
    public let documentsRead: Int
}
