import FiregateModel

/// A client-side cache index (the SDK's FieldIndex): a collection group and ordered segments,
/// each a field ascending, descending, or CONTAINS (array elements).
public struct FieldIndex: Sendable, Hashable {
    public enum Kind: Int, Sendable, Hashable {
        case ascending = 0, descending = 1, contains = 2
    }

    public struct Segment: Sendable, Hashable {
        public var field: FieldPath
        public var kind: Kind

        public init(field: FieldPath, kind: Kind) {
            self.field = field
            self.kind = kind
        }
    }

    public var collectionGroup: String
    public var segments: [Segment]

    public init(collectionGroup: String, segments: [Segment]) {
        self.collectionGroup = collectionGroup
        self.segments = segments
    }

    public var arraySegment: Segment? { segments.first { $0.kind == .contains } }
    public var directionalSegments: [Segment] { segments.filter { $0.kind != .contains } }

    /// The Firebase CLI's index-definition JSON of this index.
    public var json: JSON {
        [
            "collectionGroup": .string(collectionGroup), "queryScope": "COLLECTION",
            "fields": .array(segments.map { segment in
                switch segment.kind {
                case .contains: ["fieldPath": .string(segment.field.canonical), "arrayConfig": "CONTAINS"]
                case .ascending: ["fieldPath": .string(segment.field.canonical), "order": "ASCENDING"]
                case .descending: ["fieldPath": .string(segment.field.canonical), "order": "DESCENDING"]
                }
            }),
        ]
    }
}

/// `PUT /clients/{id}/indexes`: the Firebase CLI's `firestore.indexes.json` (setIndexConfiguration).
public enum IndexConfiguration {
    /// Parses the definition JSON; an error names the member at fault (`indexes[1].fields[0].order`).
    /// As in the web SDK, `queryScope` and `fieldOverrides` are accepted and ignored (every index
    /// serves collection and collection-group queries), and a field with neither `order` nor
    /// `arrayConfig` (e.g. a vector field) is left out.
    public static func parse(_ json: JSON) throws(FiregateError) -> [FieldIndex] {
        guard case .object = json else { throw .invalidArgument("The index configuration must be a JSON object with an \"indexes\" array.") }
        if let overrides = json["fieldOverrides"], overrides != .null, overrides.arrayValue == nil {
            throw .invalidArgument("fieldOverrides must be an array.")
        }
        guard let value = json["indexes"], value != .null else { return [] }
        guard let items = value.arrayValue else { throw .invalidArgument("indexes must be an array.") }
        var result: [FieldIndex] = []
        for (i, item) in items.enumerated() {
            let at = "indexes[\(i)]"
            guard case .object = item else { throw .invalidArgument("\(at) must be an object.") }
            guard let group = item["collectionGroup"]?.stringValue, !group.isEmpty, !group.contains("/") else {
                throw .invalidArgument("Missing string value for: collectionGroup (\(at).collectionGroup must be a collection id).")
            }
            if let scope = item["queryScope"], scope != .null, !["COLLECTION", "COLLECTION_GROUP"].contains(scope.stringValue ?? "") {
                throw .invalidArgument("\(at).queryScope must be COLLECTION or COLLECTION_GROUP.")
            }
            var segments: [FieldIndex.Segment] = []
            if let fields = item["fields"], fields != .null {
                guard let list = fields.arrayValue else { throw .invalidArgument("\(at).fields must be an array.") }
                for (j, field) in list.enumerated() {
                    if let segment = try parseField(field, at: "\(at).fields[\(j)]") { segments.append(segment) }
                }
            }
            result.append(FieldIndex(collectionGroup: group, segments: segments))
        }
        return result
    }

    static func parseField(_ field: JSON, at: String) throws(FiregateError) -> FieldIndex.Segment? {
        guard case .object = field else { throw .invalidArgument("\(at) must be an object.") }
        guard let text = field["fieldPath"]?.stringValue else {
            throw .invalidArgument("Missing string value for: fieldPath (\(at).fieldPath).")
        }
        let segments = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !text.isEmpty, !segments.contains(where: \.isEmpty), !text.contains(where: { "~*/[]".contains($0) }) else {
            throw .invalidArgument("Invalid field path (\(text)) at \(at).fieldPath. Paths must not be empty, begin with '.', end with '.', or contain '..', '~', '*', '/', '[' or ']'.")
        }
        let path = FieldPath(segments)
        // `null` counts as absent.
        let order = field["order"].flatMap { $0 == .null ? JSON?.none : $0 }
        let array = field["arrayConfig"].flatMap { $0 == .null ? JSON?.none : $0 }
        switch (order, array) {
        case (nil, nil):
            return nil
        case (.some, .some):
            throw .invalidArgument("\(at) has both order and arrayConfig; give one.")
        case (let order?, nil):
            switch order.stringValue {
            case "ASCENDING": return .init(field: path, kind: .ascending)
            case "DESCENDING": return .init(field: path, kind: .descending)
            default: throw .invalidArgument("\(at).order must be ASCENDING or DESCENDING.")
            }
        case (nil, let array?):
            guard array.stringValue == "CONTAINS" else { throw .invalidArgument("\(at).arrayConfig must be CONTAINS.") }
            return .init(field: path, kind: .contains)
        }
    }
}
