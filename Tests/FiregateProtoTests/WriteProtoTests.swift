import FiregateModel
@testable import FiregateProto
import SwiftProtobuf
import XCTest

/// `Write(proto:)` reads a Write message as `Write(json:)` reads its proto3-JSON form, and refuses
/// what it refuses (the gRPC Commit fast path then hands the call to the REST parser).
final class WriteProtoTests: XCTestCase {
    let database = DatabaseID(project: "p")
    let documentName = "projects/p/databases/(default)/documents/rooms/r1"

    func transform(_ path: String, _ make: (inout Google_Firestore_V1_DocumentTransform.FieldTransform) -> Void) -> Google_Firestore_V1_DocumentTransform.FieldTransform {
        var transform = Google_Firestore_V1_DocumentTransform.FieldTransform()
        transform.fieldPath = path
        make(&transform)
        return transform
    }

    var accepted: [Google_Firestore_V1_Write] {
        var set = Google_Firestore_V1_Write()
        set.update.name = documentName
        set.update.fields = ["a": Value.integer(1).proto, "m": Value.map(["x": .array([.string("s"), .null])]).proto,
                             "t": Value.timestamp(Timestamp(seconds: 5, nanos: 7000)).proto]
        var merge = set
        merge.updateMask.fieldPaths = ["a", "m.x", "`odd name`"]
        merge.currentDocument.exists = true
        var transforms = set
        transforms.updateTransforms = [
            transform("n") { $0.setToServerValue = .requestTime },
            transform("i") { $0.increment = Value.integer(2).proto },
            transform("max") { $0.maximum = Value.double(1.5).proto },
            transform("min") { $0.minimum = Value.integer(-1).proto },
            transform("u") { $0.appendMissingElements.values = [Value.string("a").proto] },
            transform("r") { $0.removeAllFromArray.values = [Value.integer(3).proto] },
        ]
        transforms.currentDocument.updateTime = Google_Protobuf_Timestamp(seconds: 1_700_000_000, nanos: 123_456_789)
        var delete = Google_Firestore_V1_Write()
        delete.delete = documentName
        delete.currentDocument.exists = false
        var legacy = Google_Firestore_V1_Write()
        legacy.transform.document = documentName
        legacy.transform.fieldTransforms = [transform("i") { $0.increment = Value.integer(1).proto }]
        return [set, merge, transforms, delete, legacy]
    }

    func testAcceptedWritesReadAsTheirRESTForm() throws {
        for write in accepted {
            XCTAssertEqual(try Write(proto: write, database: database), try Write(json: try write.restJSON(), database: database), "\(write)")
        }
    }

    func testRefusedWritesAreRefusedByTheRESTParserToo() throws {
        var reserved = accepted[0]
        reserved.update.fields["__x__"] = Value.integer(1).proto
        var otherDatabase = accepted[0]
        otherDatabase.update.name = "projects/q/databases/(default)/documents/rooms/r1"
        var collection = accepted[3]
        collection.delete = "projects/p/databases/(default)/documents/rooms"
        var maskOnDelete = accepted[3]
        maskOnDelete.updateMask.fieldPaths = ["a"]
        var twice = accepted[0]
        twice.updateTransforms = [transform("a") { $0.increment = Value.integer(1).proto }, transform("a") { $0.increment = Value.integer(1).proto }]
        var notANumber = accepted[0]
        notANumber.updateTransforms = [transform("a") { $0.increment = Value.string("1").proto }]
        var empty = accepted[0]
        empty.updateTransforms = [transform("a") { _ in }]
        var nestedArray = accepted[0]
        nestedArray.update.fields["bad"] = Value.array([.array([])]).proto
        for write in [reserved, otherDatabase, collection, maskOnDelete, twice, notANumber, empty, nestedArray, Google_Firestore_V1_Write()] {
            XCTAssertThrowsError(try Write(proto: write, database: database), "\(write)")
            XCTAssertThrowsError(try Write(json: try write.restJSON(), database: database), "\(write)")
        }
    }
}
