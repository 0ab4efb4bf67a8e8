import FiregateModel
@testable import FiregateProto
import Foundation
import SwiftProtobuf
import XCTest

/// Value ↔ google.firestore.v1.Value, and the proto3-JSON bridge to the REST parsers.
final class ValueProtoTests: XCTestCase {
    let database = DatabaseID(project: "p")

    /// One of every value type, nested in arrays and maps.
    var everyKind: [String: Value] {
        [
            "null": .null, "true": .boolean(true), "int": .integer(-9_007_199_254_740_993), "double": .double(2.5),
            "nan": .double(.nan), "inf": .double(-.infinity),
            "time": .timestamp(Timestamp(seconds: 1_700_000_000, nanos: 123_456_000)), "string": .string("ünïcode ✓"),
            "bytes": .bytes([0, 1, 255]), "ref": .reference("projects/p/databases/(default)/documents/a/b"),
            "geo": .geoPoint(latitude: -33.5, longitude: 151.25),
            "array": .array([.integer(1), .array([]), .map(["k": .string("v")])]),
            "map": .map(["inner": .map(["deep": .boolean(false)]), "empty": .map([:])]),
        ]
    }

    func testEveryValueKindRoundTripsThroughProtoAndItsBytes() throws {
        for (name, value) in everyKind {
            let proto = value.proto
            let decoded = try Google_Firestore_V1_Value(serializedBytes: try proto.serializedBytes() as [UInt8])
            let back = try Value(proto: decoded)
            XCTAssertTrue(Value.equals(back, value) || (value.isNaN && back.isNaN), "\(name): \(back) != \(value)")
        }
    }

    func testProtoJSONIsTheRESTJSONOfTheSameValue() throws {
        for (name, value) in everyKind {
            let viaProto = try Value(json: try value.proto.restJSON())
            XCTAssertTrue(Value.equals(viaProto, value) || (value.isNaN && viaProto.isNaN), "\(name)")
            let fromREST = try Google_Firestore_V1_Value(restJSON: value.json)
            XCTAssertTrue(Value.equals(try Value(proto: fromREST), value) || value.isNaN, "\(name)")
        }
    }

    func testOutOfRangeValuesAreInvalidArgument() {
        var geo = Google_Firestore_V1_Value()
        geo.geoPointValue = Google_Type_LatLng.with { $0.latitude = 91 }
        XCTAssertThrowsError(try Value(proto: geo)) { XCTAssertEqual(($0 as? FiregateError)?.status, .invalidArgument) }
        var time = Google_Firestore_V1_Value()
        time.timestampValue = Google_Protobuf_Timestamp(seconds: Timestamp.maxSeconds + 1, nanos: 0)
        XCTAssertThrowsError(try Value(proto: time)) { XCTAssertEqual(($0 as? FiregateError)?.status, .invalidArgument) }
        var pipeline = Google_Firestore_V1_Value()
        pipeline.fieldReferenceValue = "a.b"
        XCTAssertThrowsError(try Value(proto: pipeline)) { XCTAssertEqual(($0 as? FiregateError)?.status, .invalidArgument) }
    }

    func testDeepNestingIsRefusedNotOverflowed() {
        var value = Google_Firestore_V1_Value()
        value.integerValue = 1
        for _ in 0..<200 {
            var outer = Google_Firestore_V1_Value()
            outer.arrayValue.values = [value]
            value = outer
        }
        XCTAssertThrowsError(try Value(proto: value)) { XCTAssertEqual(($0 as? FiregateError)?.status, .invalidArgument) }
    }

    func testDocumentProtoCarriesNameTimesAndTheMaskedFields() throws {
        let document = Document(path: try ResourcePath.parse("rooms/r1"), fields: ["a": .integer(1), "b": .map(["c": .string("x"), "d": .null])],
                                createTime: Timestamp(seconds: 10, nanos: 0), updateTime: Timestamp(seconds: 20, nanos: 5000))
        let proto = document.proto(database: database, mask: [try FieldPath.parse("b.c")])
        XCTAssertEqual(proto.name, "projects/p/databases/(default)/documents/rooms/r1")
        XCTAssertEqual(proto.createTime.seconds, 10)
        XCTAssertEqual(proto.updateTime.nanos, 5000)
        XCTAssertEqual(Array(proto.fields.keys), ["b"])
        XCTAssertEqual(proto.fields["b"]?.mapValue.fields.keys.sorted(), ["c"])
    }

    /// Every filter and query shape goes through the REST parser by way of proto3 JSON.
    func testStructuredQueriesReachTheRESTParserIntact() throws {
        var query = Google_Firestore_V1_StructuredQuery()
        query.from = [Google_Firestore_V1_StructuredQuery.CollectionSelector.with { $0.collectionID = "rooms"; $0.allDescendants = true }]
        var composite = Google_Firestore_V1_StructuredQuery.CompositeFilter()
        composite.op = .or
        var field = Google_Firestore_V1_StructuredQuery.FieldFilter()
        field.field.fieldPath = "size"
        field.op = .greaterThanOrEqual
        field.value = Value.integer(3).proto
        var unary = Google_Firestore_V1_StructuredQuery.UnaryFilter()
        unary.field.fieldPath = "title"
        unary.op = .isNotNull
        composite.filters = [.with { $0.fieldFilter = field }, .with { $0.unaryFilter = unary }]
        query.where = .with { $0.compositeFilter = composite }
        query.orderBy = [.with { $0.field.fieldPath = "size"; $0.direction = .descending }]
        query.limit = .init(7)
        query.startAt = .with { $0.values = [Value.integer(10).proto]; $0.before = true }
        let json = try query.restJSON()
        let parsed = try Query(structuredQuery: json, parent: ResourcePath([]), database: database)
        XCTAssertEqual(parsed.collectionID, "rooms")
        XCTAssertTrue(parsed.allDescendants)
        XCTAssertEqual(parsed.limit, 7)
        XCTAssertEqual(parsed.orderBy.first?.descending, true)
        XCTAssertEqual(json.member("where")?.member("compositeFilter")?.member("op"), .string("OR"))
    }
}
