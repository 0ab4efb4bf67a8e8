import FiregateModel

/// The engine's values as the rules see them (docs/wire/security-rules.md: Types and values, request and resource): documents
/// become resources, references become paths, geo points latlngs; tokens become `request.auth`.
extension RulesValue {
    public init(_ value: Value) {
        switch value {
        case .null: self = .null
        case .boolean(let b): self = .bool(b)
        case .integer(let i): self = .int(i)
        case .double(let d): self = .float(d)
        case .timestamp(let t): self = .timestamp(seconds: t.seconds, nanos: t.nanos)
        case .string(let s): self = .string(s)
        case .bytes(let b): self = .bytes(b)
        case .reference(let name): self = .path(RulesValue.referencePath(name))
        case .geoPoint(let latitude, let longitude): self = .latlng(latitude: latitude, longitude: longitude)
        case .array(let items): self = .list(items.map(RulesValue.init))
        case .map(let fields): self = .map(fields.mapValues(RulesValue.init))
        // A server timestamp is `request.time` by the time rules see a write; one still pending
        // (edge-only) reads as its local estimate.
        case .serverTimestamp(let local, _): self = .timestamp(seconds: local.seconds, nanos: local.nanos)
        }
    }

    /// `projects/p/databases/d/documents/a/b` → `databases/d/documents/a/b`, the form rules paths take.
    static func referencePath(_ name: String) -> [String] {
        let segments = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        return segments.first == "projects" && segments.count >= 2 ? Array(segments.dropFirst(2)) : segments
    }

    /// A document as `resource`: `{data, id, __name__}`.
    public static func resource(_ document: Document, database: DatabaseID) -> RulesValue {
        .map([
            "data": .map(document.fields.mapValues(RulesValue.init)),
            "id": .string(document.path.segments.last ?? ""),
            "__name__": .path(["databases", database.database, "documents"] + document.path.segments),
        ])
    }

    /// A document's full path as `request.path` has it.
    public static func documentPath(_ path: ResourcePath, database: DatabaseID) -> [String] {
        ["databases", database.database, "documents"] + path.segments
    }

    /// `request.auth` from a token's payload: `{uid: sub ?? user_id, token: payload}`; nil → `null`.
    public static func auth(claims: JSON?) -> RulesValue {
        guard let claims, case .object(let fields) = claims else { return .null }
        let token = RulesValue(json: claims)
        let uid = fields["sub"]?.stringValue ?? fields["user_id"]?.stringValue
        return .map(["uid": uid.map(RulesValue.string) ?? .null, "token": token])
    }

    /// JSON as a rules value (token claims): numbers written as integers stay ints.
    public init(json: JSON) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .float(d)
        case .string(let s): self = .string(s)
        case .array(let items): self = .list(items.map(RulesValue.init(json:)))
        case .object(let fields): self = .map(Dictionary(uniqueKeysWithValues: fields.map { ($0.key, RulesValue(json: $0.value)) }))
        }
    }
}
