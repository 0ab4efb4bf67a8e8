import FiregateModel

/// What a real SDK connection is (docs/architecture.md, Real SDK connections): one RTDB socket, or one project/database
/// addressed over one HTTP/2 connection.
struct ConnectionInfo: Sendable {
    var id = ""
    let `protocol`: String
    let appId: String?
    let userAgent: String?
    let peer: String?
    let project: String?
    let database: String?
    let namespace: String?
    var uid: String?
    var openedAt = Timestamp(microseconds: 0)
    var listens = 0
    var online = true
    /// Calls finished on this entry, by method (gRPC).
    var calls: [String: Int] = [:]

    var json: JSON {
        var members: [(String, JSON)] = [("id", .string(id)), ("protocol", .string(self.protocol))]
        for (name, value) in [("appId", appId), ("userAgent", userAgent), ("peer", peer), ("project", project), ("database", database),
                              ("namespace", namespace)] {
            members.append((name, value.map(JSON.string) ?? .null))
        }
        members += [("auth", ["uid": uid.map(JSON.string) ?? .null]), ("openedAt", .string(openedAt.rfc3339)),
                    ("listens", .int(Int64(listens))), ("online", .bool(online))]
        if self.protocol == "firestore-grpc" {
            members.append(("calls", .object(.init(calls.sorted { $0.key < $1.key }.map { ($0.key, JSON.int(Int64($0.value))) },
                                                   uniquingKeysWith: { _, last in last }))))
        }
        return .object(.init(members, uniquingKeysWith: { _, last in last }))
    }
}

/// Which connections a network switch applies to: every given key must match.
struct NetworkMatch: Sendable, Equatable {
    static let keys = ["id", "appId", "uid", "namespace", "project"]
    var values: [String: String]

    init(json: JSON?) throws(FiregateError) {
        guard case .object(let members)? = json, !members.isEmpty else {
            throw .invalidArgument("match needs at least one of \(NetworkMatch.keys.joined(separator: ", ")).")
        }
        var values: [String: String] = [:]
        for (key, value) in members {
            guard NetworkMatch.keys.contains(key) else {
                throw .invalidArgument("Unknown match key \"\(key)\"; use \(NetworkMatch.keys.joined(separator: ", ")).")
            }
            guard let text = value.stringValue, !text.isEmpty else { throw .invalidArgument("match.\(key) must be a non-empty string.") }
            values[key] = text
        }
        self.values = values
    }

    func matches(_ info: ConnectionInfo) -> Bool {
        values.allSatisfy { key, value in
            switch key {
            case "id": info.id == value
            case "appId": info.appId == value
            case "uid": info.uid == value
            case "namespace": info.namespace == value
            case "project": info.project == value
            default: false
            }
        }
    }

    var json: JSON { .object(.init(values.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value)) }, uniquingKeysWith: { a, _ in a })) }
}

/// `PUT /emulator/v1/connections/network`: offline drops the matching connections and refuses
/// new ones until the same match is set online; `latencyMs` delays every frame both ways.
struct NetworkSwitch: Sendable {
    var match: NetworkMatch
    var online: Bool
    var latencyMs: Int

    init(json: JSON) throws(FiregateError) {
        match = try NetworkMatch(json: json.member("match"))
        guard let online = json.member("online")?.boolValue else { throw .invalidArgument("online must be true or false.") }
        self.online = online
        let latency = json.member("latencyMs")?.integerLike ?? 0
        guard (0...60_000).contains(latency) else { throw .invalidArgument("latencyMs must be between 0 and 60000.") }
        latencyMs = Int(latency)
    }

    /// A switch that changes nothing is removed rather than kept.
    var isNeutral: Bool { online && latencyMs == 0 }

    var json: JSON { ["match": match.json, "online": .bool(online), "latencyMs": .int(Int64(latencyMs))] }
}
