@testable import FiregateModel
import XCTest

/// The pairs of writes to one document a commit may not hold, and verify's precondition, with
/// production's messages (docs/documents.md).
final class WriteSequenceTests: XCTestCase {
    private let path = ResourcePath(["c", "d"])

    private func write(_ operation: Write.Operation, exists: Bool? = nil) -> Write {
        Write(path: path, operation: operation, precondition: Precondition(exists: exists))
    }

    private func refused(_ writes: [Write], _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try Write.validateSequence(writes), file: file, line: line) { error in
            XCTAssertEqual((error as? FiregateError)?.message, message, file: file, line: line)
        }
    }

    func testRefusedPairsNameBothWrites() {
        let upsert = write(.update(fields: [:], mask: nil)), insert = write(.update(fields: [:], mask: nil), exists: false)
        let update = write(.update(fields: [:], mask: []), exists: true), delete = write(.delete)
        refused([delete, update], "Cannot delete then update an entity in the same request.")
        refused([delete, write(.delete, exists: true)], "Cannot delete then delete an entity in the same request.")
        refused([upsert, insert], "Cannot upsert then insert an entity in the same request.")
        refused([update, insert], "Cannot update then insert an entity in the same request.")
        for allowed in [[delete, upsert], [delete, insert], [upsert, delete], [upsert, update], [update, update], [delete, delete]] {
            XCTAssertNoThrow(try Write.validateSequence(allowed))
        }
        // Other documents do not pair.
        XCTAssertNoThrow(try Write.validateSequence([delete, Write(path: ResourcePath(["c", "e"]), operation: .update(fields: [:], mask: nil),
                                                                   precondition: Precondition(exists: true))]))
    }

    func testAVerifyNeedsItsPreconditionAndItsDocumentAlone() {
        refused([write(.verify)], "a verify must contain a precondition")
        let verify = write(.verify, exists: true), upsert = write(.update(fields: [:], mask: nil))
        refused([verify, upsert], "the same document cannot be verified and then written in a single request")
        refused([upsert, verify], "the same document cannot be written and then verified in a single request")
        refused([verify, verify], "the same document cannot be verified more than once in a single request")
        XCTAssertNoThrow(try Write.validateSequence([verify]))
    }

    func testTheBackendMatchesNothingWithANullOrNaNOperandAndTheSDKDoes() {
        let null = Value.null, nan = Value.double(.nan)
        XCTAssertFalse(Query.Filter.compareOnBackend(null, .equal, null))
        XCTAssertTrue(Query.Filter.compare(null, .equal, null))
        XCTAssertFalse(Query.Filter.compareOnBackend(null, .in, .array([null])))
        XCTAssertTrue(Query.Filter.compareOnBackend(.integer(1), .in, .array([null, .integer(1)])))
        XCTAssertFalse(Query.Filter.compareOnBackend(.array([null]), .arrayContainsAny, .array([null])))
        XCTAssertFalse(Query.Filter.compareOnBackend(.integer(1), .notEqual, null))
        XCTAssertTrue(Query.Filter.compareOnBackend(nan, .notEqual, nan))
        XCTAssertFalse(Query.Filter.compareOnBackend(nan, .equal, nan))
        XCTAssertFalse(Query.Filter.compareOnBackend(.integer(1), .notIn, .array([null])))
    }
}
