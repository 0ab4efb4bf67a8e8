import FiregateModel
import XCTest

/// The bundle format: what the Admin SDK's builder writes, the SDK's reader reads back, the
/// loader's progress figures, and the faults that load nothing.
final class FirestoreBundleTests: XCTestCase {
    let database = DatabaseID(project: "p")

    func time(_ micros: Int64) -> Timestamp { Timestamp(microseconds: micros) }

    /// One element as the format spells it: the JSON's byte length, then the JSON.
    func element(_ json: String) -> String { "\(json.utf8.count)\(json)" }

    var metadata: String { element(#"{"metadata":{"id":"b","createTime":"1970-01-01T00:00:00.000500Z","version":1,"totalDocuments":2,"totalBytes":0}}"#) }

    func parse(_ text: String) throws -> FirestoreBundle {
        try FirestoreBundle(bytes: Array(text.utf8), database: database)
    }

    func testAnEncodedBundleReadsBackWithItsTotalsCounted() throws {
        let found = Document(path: ResourcePath(["c", "a"]), fields: ["v": .string("é")], createTime: time(100), updateTime: time(400))
        let named = FirestoreBundle.NamedQuery(name: "q", readTime: time(500), parent: database.documentsRoot,
                                               structuredQuery: ["from": [["collectionId": "c"]]], limitToLast: true)
        let bytes = FirestoreBundle.encode(id: "b", createTime: time(500), namedQueries: [named],
                                           documents: [.init(path: found.path, readTime: time(500), queries: ["q"], document: found),
                                                       .init(path: ResourcePath(["c", "gone"]), readTime: time(500), document: nil)],
                                           database: database)
        let bundle = try FirestoreBundle(bytes: bytes, database: database)

        XCTAssertEqual(bundle.metadata, .init(id: "b", createTime: time(500), version: 1, totalDocuments: 2,
                                              totalBytes: bundle.elements.reduce(0) { $0 + $1.bytes }))
        XCTAssertEqual(bundle.namedQueries, [named])
        XCTAssertEqual(bundle.documents.map(\.document), [found, nil])
        XCTAssertEqual(bundle.documents.map(\.queries), [["q"], []])
        // The metadata element is not counted in totalBytes; every other one is, prefix included.
        let head = bytes.prefix { $0 != UInt8(ascii: "{") }
        let headLength = Int(String(decoding: head, as: UTF8.self))!
        XCTAssertEqual(bundle.metadata.totalBytes, Int64(bytes.count - head.count - headLength))
        XCTAssertTrue(try named.query(database: database).limitToLast)
    }

    func testProgressCountsEachDocumentAsTheLoaderReadsIt() throws {
        let missing = element(#"{"documentMetadata":{"name":"projects/p/databases/(default)/documents/c/x","readTime":"1970-01-01T00:00:00.000500Z","exists":false}}"#)
        let meta = element(#"{"documentMetadata":{"name":"projects/p/databases/(default)/documents/c/a","readTime":"1970-01-01T00:00:00.000500Z","exists":true}}"#)
        let document = element(#"{"document":{"name":"projects/p/databases/(default)/documents/c/a","createTime":{"seconds":"0","nanos":250000},"updateTime":{"seconds":0,"nanos":500000},"fields":{"v":{"integerValue":"1"}}}}"#)
        let bundle = try parse(metadata + missing + meta + document)

        let sizes = [missing, meta, document].map { Int64($0.utf8.count) }
        XCTAssertEqual(bundle.progress.map(\.documentsLoaded), [0, 1, 2, 2])
        XCTAssertEqual(bundle.progress.map(\.bytesLoaded), [0, sizes[0], sizes.reduce(0, +), sizes.reduce(0, +)])
        XCTAssertEqual(bundle.progress.map(\.taskState), [.running, .running, .running, .success])
        XCTAssertEqual(bundle.documents[1].document?.updateTime, time(500))
        XCTAssertEqual(bundle.documents[1].document?.createTime, time(250))
    }

    func testTheMetadataReadsAloneWhateverFollows() throws {
        let metadata = try FirestoreBundle.metadata(of: Array((self.metadata + "5{nope").utf8))
        XCTAssertEqual(metadata, .init(id: "b", createTime: time(500), version: 1, totalDocuments: 2, totalBytes: 0))
        XCTAssertThrowsError(try FirestoreBundle.metadata(of: Array(element(#"{"namedQuery":{"name":"q"}}"#).utf8)))
    }

    func testFaultsAnywhereAreInvalidArgument() {
        let meta = element(#"{"documentMetadata":{"name":"projects/p/databases/(default)/documents/c/a","readTime":"1970-01-01T00:00:00Z","exists":true}}"#)
        let cases: [(String, String)] = [
            ("", "empty"),
            (element(#"{"namedQuery":{"name":"q"}}"#), "not a metadata"),
            ("12x{}", "decimal digits"),
            (String(metadata.dropLast(3)), "more is expected"),
            (metadata + "5{nope", "not JSON"),
            (metadata + meta, "document element is missing"),
            (metadata + element(#"{"document":{"name":"projects/p/databases/(default)/documents/c/a","createTime":"1970-01-01T00:00:00Z","updateTime":"1970-01-01T00:00:00Z"}}"#), "does not follow"),
            (metadata + element(#"{"documentMetadata":{"name":"projects/other/databases/(default)/documents/c/a","readTime":"1970-01-01T00:00:00Z"}}"#), "outside the database"),
            (metadata + metadata, "one metadata"),
            (metadata + element(#"{"namedQuery":{"name":"q","readTime":"1970-01-01T00:00:00Z","bundledQuery":{"parent":"projects/p/databases/(default)/documents","structuredQuery":{"from":[{"collectionId":"c"}]},"limitType":"MIDDLE"}}}"#), "FIRST or LAST"),
        ]
        for (text, message) in cases {
            XCTAssertThrowsError(try parse(text), message) { error in
                let error = error as! FiregateError
                XCTAssertEqual(error.status, .invalidArgument, message)
                XCTAssertTrue(error.message.contains(message), "\(message): \(error.message)")
            }
        }
    }
}
