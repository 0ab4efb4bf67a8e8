import OrderedCollections

extension FirestoreBundle {
    /// Reads a whole bundle of `database`, checking it as the SDK's reader and loader do: any
    /// fault (a length that is not a number, a truncated element, JSON that does not parse, a
    /// first element that is not the metadata, a document without its metadata or of another
    /// database) is INVALID_ARGUMENT, and nothing of the bundle counts.
    public init(bytes: [UInt8], database: DatabaseID) throws(FiregateError) {
        var reader = ElementReader(bytes: bytes)
        self.init(metadata: try FirestoreBundle.readMetadata(&reader), namedQueries: [], documents: [])
        var awaitingDocument = false
        while let element = try reader.next() {
            guard case .object(let members) = element.json, members.count == 1, let only = members.elements.first else {
                throw .invalidArgument("A bundle element is an object with one member: namedQuery, documentMetadata or document.")
            }
            let (kind, body) = (only.key, only.value)
            var completes = false
            switch kind {
            case "namedQuery":
                let query = try NamedQuery(json: body)
                _ = try query.query(database: database)
                namedQueries.append(query)
            case "documentMetadata":
                guard !awaitingDocument else { throw .invalidArgument("A bundle document's metadata says it exists, but its document element is missing.") }
                let name = try Self.string(body, "name", in: "documentMetadata")
                let path = try database.path(fromName: name)
                guard path.isDocument else { throw .invalidArgument("\"\(name)\" in a bundle is not a document name.") }
                let exists = body.member("exists")?.boolValue ?? false
                let queries = (body.member("queries")?.arrayValue ?? []).compactMap(\.stringValue)
                documents.append(BundledDocument(path: path, readTime: try Self.timestamp(body, "readTime", in: "documentMetadata"),
                                                 queries: queries, document: nil))
                awaitingDocument = exists
                completes = !exists
            case "document":
                let name = try Self.string(body, "name", in: "document")
                guard awaitingDocument, let last = documents.last, database.resourceName(last.path) == name else {
                    throw .invalidArgument("The bundle's document \"\(name)\" does not follow its documentMetadata.")
                }
                documents[documents.count - 1].document = Document(
                    path: last.path, fields: try Value.parseFields(body.member("fields")),
                    createTime: try Self.timestamp(body, "createTime", in: "document"), updateTime: try Self.timestamp(body, "updateTime", in: "document"))
                awaitingDocument = false
                completes = true
            case "metadata":
                throw .invalidArgument("A bundle has one metadata element, the first.")
            default:
                throw .invalidArgument("Unknown bundle element \"\(kind)\".")
            }
            elements.append((bytes: element.size, completesDocument: completes))
        }
        guard !awaitingDocument else { throw .invalidArgument("A bundle document's metadata says it exists, but its document element is missing.") }
    }

    /// The bundle's metadata, its first element: what the SDK reads before it decides whether to
    /// load the rest (a bundle already loaded is skipped unread).
    public static func metadata(of bytes: [UInt8]) throws(FiregateError) -> Metadata {
        var reader = ElementReader(bytes: bytes)
        return try readMetadata(&reader)
    }

    private static func readMetadata(_ reader: inout ElementReader) throws(FiregateError) -> Metadata {
        guard let first = try reader.next() else { throw .invalidArgument("The bundle is empty: its first element must be the metadata.") }
        guard let metadata = first.json["metadata"] else {
            throw .invalidArgument("The first element of the bundle is not a metadata, it is \(JSONWriter.string(first.json)).")
        }
        return try Metadata(json: metadata)
    }

    /// Writes a bundle of `database` as the Admin SDK's builder does: the metadata (its totals
    /// counted here), the named queries, then each document's metadata and document.
    public static func encode(id: String, createTime: Timestamp, namedQueries: [NamedQuery], documents: [BundledDocument],
                              database: DatabaseID) -> [UInt8] {
        var body: [UInt8] = []
        func append(_ json: JSON) {
            let bytes = JSONWriter.bytes(json)
            body += Array(String(bytes.count).utf8)
            body += bytes
        }
        for query in namedQueries { append(["namedQuery": query.json]) }
        for bundled in documents {
            var metadata: OrderedDictionary<String, JSON> = ["name": .string(database.resourceName(bundled.path)),
                                                             "readTime": .string(bundled.readTime.rfc3339),
                                                             "exists": .bool(bundled.document != nil)]
            if !bundled.queries.isEmpty { metadata["queries"] = .array(bundled.queries.map { .string($0) }) }
            append(["documentMetadata": .object(metadata)])
            if let document = bundled.document { append(["document": document.json(database: database)]) }
        }
        let metadata: JSON = ["metadata": ["id": .string(id), "createTime": .string(createTime.rfc3339), "version": 1,
                                           "totalDocuments": .int(Int64(documents.count)), "totalBytes": .int(Int64(body.count))]]
        let head = JSONWriter.bytes(metadata)
        return Array(String(head.count).utf8) + head + body
    }

    static func string(_ json: JSON, _ name: String, in element: String) throws(FiregateError) -> String {
        guard let value = json.member(name)?.stringValue, !value.isEmpty else {
            throw .invalidArgument("The bundle's \(element) needs \(name) (a string).")
        }
        return value
    }

    /// A proto3 JSON timestamp: an RFC 3339 string, or `{"seconds","nanos"}` as the Admin SDK
    /// for Node writes it.
    static func timestamp(_ json: JSON, _ name: String, in element: String) throws(FiregateError) -> Timestamp {
        switch json.member(name) {
        case .string(let text)?:
            if let time = Timestamp(rfc3339: text) { return time }
        case .object(let parts)?:
            if let seconds = (parts["seconds"] ?? .int(0)).integerLike, let nanos = (parts["nanos"] ?? .int(0)).integerLike,
               (0..<1_000_000_000).contains(nanos) {
                return Timestamp(seconds: seconds, nanos: Int32(nanos))
            }
        default:
            break
        }
        throw .invalidArgument("The bundle's \(element) needs \(name) (a timestamp).")
    }
}

extension FirestoreBundle.Metadata {
    init(json: JSON) throws(FiregateError) {
        func count(_ name: String) throws(FiregateError) -> Int64 {
            guard let value = json.member(name) else { return 0 }
            guard let n = value.integerLike, n >= 0 else { throw .invalidArgument("The bundle's metadata \(name) must be a count.") }
            return n
        }
        self.init(id: try FirestoreBundle.string(json, "id", in: "metadata"),
                  createTime: try FirestoreBundle.timestamp(json, "createTime", in: "metadata"),
                  version: try count("version"), totalDocuments: try count("totalDocuments"), totalBytes: try count("totalBytes"))
    }
}

extension FirestoreBundle.NamedQuery {
    /// A named query as a bundle (or a saved bundle cache) writes it.
    public init(json: JSON) throws(FiregateError) {
        let name = try FirestoreBundle.string(json, "name", in: "namedQuery")
        guard let bundled = json.member("bundledQuery"), case .object = bundled else {
            throw .invalidArgument("The bundle's named query \"\(name)\" needs bundledQuery.")
        }
        guard let structured = bundled.member("structuredQuery"), case .object = structured else {
            throw .invalidArgument("The bundle's named query \"\(name)\" needs bundledQuery.structuredQuery.")
        }
        let limitToLast: Bool
        switch bundled.member("limitType")?.stringValue {
        case nil, "FIRST": limitToLast = false
        case "LAST": limitToLast = true
        case let other?: throw .invalidArgument("The bundle's named query \"\(name)\" has limitType \(other); it is FIRST or LAST.")
        }
        self.init(name: name, readTime: try FirestoreBundle.timestamp(json, "readTime", in: "namedQuery"),
                  parent: try FirestoreBundle.string(bundled, "parent", in: "bundledQuery"), structuredQuery: structured, limitToLast: limitToLast)
    }
}

/// Splits a bundle into its elements: a decimal length, then that many bytes of JSON.
struct ElementReader {
    let bytes: [UInt8]
    var offset = 0

    /// The next element and its size with its prefix; nil at the end.
    mutating func next() throws(FiregateError) -> (json: JSON, size: Int64)? {
        guard offset < bytes.count else { return nil }
        let start = offset
        var length = 0
        while offset < bytes.count, bytes[offset] != UInt8(ascii: "{") {
            let byte = bytes[offset]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), offset - start < 12 else {
                throw .invalidArgument("A bundle element must start with its length in decimal digits (at byte \(offset)).")
            }
            length = length * 10 + Int(byte - UInt8(ascii: "0"))
            offset += 1
        }
        guard offset < bytes.count, offset > start else {
            throw .invalidArgument("Reached the end of bundle when a length string is expected.")
        }
        guard bytes.count - offset >= length else { throw .invalidArgument("Reached the end of bundle when more is expected.") }
        let slice = bytes[offset..<(offset + length)]
        offset += length
        do {
            return (try JSONParser.parse(slice), Int64(offset - start))
        } catch {
            throw .invalidArgument("A bundle element is not JSON: \(error.description)")
        }
    }
}
