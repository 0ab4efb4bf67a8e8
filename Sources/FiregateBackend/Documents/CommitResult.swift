import FiregateModel

/// What one write of a commit did: its document's new update time (none for a delete or a
/// verify) and the values its transforms produced.
public struct WriteResult: Sendable, Equatable {
    public let updateTime: Timestamp?
    public let transformResults: [Value]?

    public init(updateTime: Timestamp?, transformResults: [Value]?) {
        self.updateTime = updateTime
        self.transformResults = transformResults
    }
}

/// A commit's answer: its time and one result per write, in the writes' order.
public struct CommitResult: Sendable, Equatable {
    public let commitTime: Timestamp
    public let writeResults: [WriteResult]

    public init(commitTime: Timestamp, writeResults: [WriteResult]) {
        self.commitTime = commitTime
        self.writeResults = writeResults
    }
}

extension CommitResult {
    /// `{"writeResults":[…],"commitTime":…}`; an empty list is left out, as proto3 JSON does.
    public var restJSON: JSON {
        var result: JSON = [:]
        if !writeResults.isEmpty { result = result.withMember("writeResults", .array(writeResults.map(\.restJSON))) }
        return result.withMember("commitTime", .string(commitTime.rfc3339))
    }

    /// A REST CommitResponse (another replica's answer, or one stored with its commit).
    public init(restJSON json: JSON) throws(FiregateError) {
        guard let time = json.member("commitTime")?.stringValue.flatMap(Timestamp.init(rfc3339:)) else {
            throw .internal("A commit answer without commitTime.")
        }
        var results: [WriteResult] = []
        for item in json.member("writeResults")?.arrayValue ?? [] {
            let updateTime = item.member("updateTime")?.stringValue.flatMap(Timestamp.init(rfc3339:))
            var transforms: [Value]?
            if let values = item.member("transformResults")?.arrayValue {
                transforms = []
                for value in values { transforms?.append(try Value(json: value)) }
            }
            results.append(WriteResult(updateTime: updateTime, transformResults: transforms))
        }
        self.init(commitTime: time, writeResults: results)
    }
}

extension WriteResult {
    /// `{"updateTime":…,"transformResults":[…]}`; `{}` for a delete.
    public var restJSON: JSON {
        var result: JSON = [:]
        if let updateTime { result = result.withMember("updateTime", .string(updateTime.rfc3339)) }
        if let transformResults { result = result.withMember("transformResults", .array(transformResults.map(\.json))) }
        return result
    }
}
