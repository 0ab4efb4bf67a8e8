@testable import FiregateExport
import FiregateModel
import XCTest

/// Firestore documents as export entities (docs/export-format.md).
final class DocumentEntityTests: XCTestCase {
    private let database = DatabaseID(project: "demo-x")
    private let time = Timestamp(seconds: 1_700_000_000, nanos: 0)

    func testTheReferencesWorkedExampleIsWhatADocumentIsWrittenAs() {
        let document = Document(path: ResourcePath(["c", "d"]), fields: ["n": .integer(1)], createTime: time, updateTime: time)
        let record = DocumentEntity.entity(of: document, database: database).encoded()
        let expected: [UInt8] = [0x6A, 0x16, 0x6A, 0x0A] + Array("dev~demo-x".utf8)
            + [0x72, 0x08, 0x0B, 0x12, 0x01, 0x63, 0x22, 0x01, 0x64, 0x0C]
            + [0x7A, 0x09, 0x1A, 0x01, 0x6E, 0x20, 0x00, 0x2A, 0x02, 0x08, 0x01]
            + [0x82, 0x01, 0x08, 0x0B, 0x12, 0x01, 0x63, 0x22, 0x01, 0x64, 0x0C]
        XCTAssertEqual(record, expected)
        let framed = LevelDBLog.write([record])
        XCTAssertEqual(Array(framed[4..<7]), [0x2E, 0x00, 0x01], "length 46, FULL")
    }

    func testEveryValueTypeComesBackAsItWent() throws {
        let fields: [String: Value] = [
            "null": .null, "yes": .boolean(true), "int": .integer(-42), "big": .integer(.max), "double": .double(-0.5),
            "nan": .double(.nan), "text": .string("héllo"), "bytes": .bytes([0, 255, 10]),
            "when": .timestamp(Timestamp(seconds: 1_234_567_890, nanos: 123_456_000)),
            "where": .geoPoint(latitude: 48.85, longitude: 2.35),
            "ref": .reference("projects/demo-other/databases/(default)/documents/a/b/c/d"),
            "refNamed": .reference("projects/demo-x/databases/named/documents/a/b"),
            "list": .array([.integer(1), .string("two"), .map(["k": .boolean(false)])]),
            "empty": .array([]), "emptyMap": .map([:]),
            "map": .map(["inner": .map(["deep": .integer(3), "list": .array([])]), "s": .string("x")]),
            "vector": .map(["__type__": .string("__vector__"), "value": .array([.double(1), .double(2)])]),
        ]
        let document = Document(path: ResourcePath(["users", "u1", "posts", "p1"]), fields: fields, createTime: time, updateTime: time)
        let entity = DocumentEntity.entity(of: document, database: DatabaseID(project: "demo-x", database: "named"))
        let decoded = try Entity.decode(entity.encoded()[...], context: "output-0: record 0")
        XCTAssertEqual(decoded, entity)
        XCTAssertEqual(decoded.key.databaseID, "named")
        let (id, back) = try DocumentEntity.document(of: decoded, project: "demo-import", at: time, context: "t")
        XCTAssertEqual(id, DatabaseID(project: "demo-import", database: "named"), "documents go into the importing project")
        XCTAssertEqual(back.path, document.path)
        for (name, value) in fields where name != "nan" {
            XCTAssertEqual(back.fields[name], value, name)
        }
        if case .double(let d)? = back.fields["nan"] { XCTAssertTrue(d.isNaN) } else { XCTFail("NaN") }
        XCTAssertEqual(entity.properties.filter { !$0.raw }.map(\.name), ["empty"], "only an empty list is a plain property")
        // A vector is its doubles, each of meaning 31, as the emulator writes it.
        XCTAssertEqual(entity.properties.filter { $0.name == "vector" }, [
            Entity.Property(name: "vector", meaning: 31, multiple: true, value: .double(1)),
            Entity.Property(name: "vector", meaning: 31, multiple: true, value: .double(2)),
        ])
    }

    func testSubMicrosecondTimeIsLostAsFirestoreExportsLoseIt() throws {
        let document = Document(path: ResourcePath(["c", "d"]), fields: ["t": .timestamp(Timestamp(seconds: 1, nanos: 1_999))], createTime: time, updateTime: time)
        let (_, back) = try DocumentEntity.document(of: DocumentEntity.entity(of: document, database: database), project: "p", at: time, context: "t")
        XCTAssertEqual(back.fields["t"], .timestamp(Timestamp(seconds: 1, nanos: 1_000)))
    }

    func testAnUnknownFieldOrBrokenTextIsAnErrorNamingTheRecord() {
        var writer = ProtoWriter()
        writer.string(99, "?")
        XCTAssertThrowsError(try Entity.decode(writer.bytes[...], context: "output-3: record 7")) { error in
            XCTAssertEqual((error as? FiregateError)?.message, "output-3: record 7: unknown field 99 in an entity.")
        }
        let document = Document(path: ResourcePath(["c", "d"]), fields: ["s": .string("ok")], createTime: time, updateTime: time)
        var entity = DocumentEntity.entity(of: document, database: database)
        entity.properties[0].value = .bytes([0xFF, 0xFE])
        XCTAssertThrowsError(try DocumentEntity.document(of: entity, project: "p", at: time, context: "output-0: record 2")) { error in
            XCTAssertEqual((error as? FiregateError)?.message, "output-0: record 2: field s holds text that is not UTF-8.")
        }
        XCTAssertThrowsError(try Entity.decode(Array(DocumentEntity.entity(of: document, database: database).encoded().dropLast(3))[...], context: "r"))
    }
}
