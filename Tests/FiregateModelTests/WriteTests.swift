@testable import FiregateModel
import XCTest

let commitTime = Timestamp(microseconds: 5_000_000)

/// Applies `write` the way the server does (REQUEST_TIME = the commit time).
func applyWrite(_ write: Write, to existing: Document?) throws -> WriteOutcome {
    try write.apply(to: existing, commitTime: commitTime, database: testDB) { _ in .timestamp(commitTime) }
}

final class TransformTests: XCTestCase {
    /// The field `f` after one transform on a document holding `current` (nil: no field), and the transform result.
    func transform(_ current: Value?, _ operation: FieldTransform.Operation, field: String = "f") throws -> (Value?, Value) {
        let existing = makeDoc("c/d", current.map { ["f": $0] } ?? ["other": .boolean(true)])
        let write = Write(path: rpath("c/d"), operation: .transform, transforms: [FieldTransform(field: fpath(field), operation: operation)])
        let outcome = try applyWrite(write, to: existing)
        XCTAssertEqual(outcome.transformResults.count, 1)
        return (outcome.document.flatMap { Document.value(in: $0.fields, at: fpath(field).segments[...]) }, outcome.transformResults[0])
    }

    func assertField(_ current: Value?, _ operation: FieldTransform.Operation, becomes expected: Value, result: Value? = nil,
                     file: StaticString = #filePath, line: UInt = #line) throws {
        let (value, transformResult) = try transform(current, operation)
        guard let value else { return XCTFail("field missing", file: file, line: line) }
        XCTAssertTrue(sameValue(value, expected), "\(value) != \(expected)", file: file, line: line)
        XCTAssertTrue(sameValue(transformResult, result ?? expected), "result \(transformResult)", file: file, line: line)
    }

    /// Equal and of the same type (an integer 3 is not a double 3.0 here), NaN equal to NaN, -0 distinct from 0.
    func sameValue(_ a: Value, _ b: Value) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): return (x.isNaN && y.isNaN) || (x == y && x.sign == y.sign)
        case (.integer(let x), .integer(let y)): return x == y
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(sameValue)
        default: return a == b
        }
    }

    func testIncrement() throws {
        try assertField(.integer(2), .increment(.integer(3)), becomes: .integer(5))
        try assertField(.integer(2), .increment(.double(0.5)), becomes: .double(2.5))
        try assertField(.double(1.5), .increment(.integer(1)), becomes: .double(2.5))
        try assertField(.double(1.5), .increment(.double(-1.5)), becomes: .double(0))
        try assertField(nil, .increment(.integer(7)), becomes: .integer(7))
        try assertField(.string("x"), .increment(.double(1.5)), becomes: .double(1.5))
        try assertField(.null, .increment(.integer(1)), becomes: .integer(1))
        try assertField(.double(.nan), .increment(.integer(1)), becomes: .double(.nan))
        try assertField(.integer(1), .increment(.double(.infinity)), becomes: .double(.infinity))
    }

    func testIncrementSaturatesOnOverflow() throws {
        try assertField(.integer(.max - 1), .increment(.integer(5)), becomes: .integer(.max))
        try assertField(.integer(.max), .increment(.integer(.max)), becomes: .integer(.max))
        try assertField(.integer(.min + 1), .increment(.integer(-5)), becomes: .integer(.min))
        try assertField(.integer(.min), .increment(.integer(.min)), becomes: .integer(.min))
        try assertField(.integer(.max), .increment(.integer(.min)), becomes: .integer(-1))
    }

    func testMaximum() throws {
        try assertField(.integer(3), .maximum(.integer(5)), becomes: .integer(5))
        try assertField(.integer(3), .maximum(.double(4.5)), becomes: .double(4.5))
        try assertField(.double(5.5), .maximum(.integer(2)), becomes: .double(5.5))
        try assertField(.integer(7), .maximum(.double(2)), becomes: .integer(7))
        // Equal values keep the stored one, with its type: 3 vs 3.0 stays an integer.
        try assertField(.integer(3), .maximum(.double(3)), becomes: .integer(3))
        try assertField(.double(3), .maximum(.integer(3)), becomes: .double(3))
        try assertField(.double(-0.0), .maximum(.integer(0)), becomes: .double(-0.0))
        try assertField(.integer(0), .maximum(.double(-0.0)), becomes: .integer(0))
        // NaN wins, stored or given.
        try assertField(.double(.nan), .maximum(.integer(9)), becomes: .double(.nan))
        try assertField(.integer(9), .maximum(.double(.nan)), becomes: .double(.nan))
        // Not a number (or missing): set to the operand.
        try assertField(.string("x"), .maximum(.integer(1)), becomes: .integer(1))
        try assertField(nil, .maximum(.double(-2)), becomes: .double(-2))
        try assertField(.array([]), .maximum(.integer(1)), becomes: .integer(1))
    }

    func testMinimum() throws {
        try assertField(.integer(3), .minimum(.integer(5)), becomes: .integer(3))
        try assertField(.integer(3), .minimum(.double(-4.5)), becomes: .double(-4.5))
        try assertField(.double(5.5), .minimum(.integer(2)), becomes: .integer(2))
        try assertField(.integer(3), .minimum(.double(3)), becomes: .integer(3))
        try assertField(.double(.nan), .minimum(.integer(-9)), becomes: .double(.nan))
        try assertField(.integer(-9), .minimum(.double(.nan)), becomes: .double(.nan))
        try assertField(.boolean(true), .minimum(.integer(1)), becomes: .integer(1))
        try assertField(nil, .minimum(.integer(4)), becomes: .integer(4))
    }

    func testAppendMissingElements() throws {
        try assertField(.array([.integer(1), .integer(2)]), .appendMissingElements([.double(2), .integer(3), .integer(3)]),
                        becomes: .array([.integer(1), .integer(2), .integer(3)]), result: .null)
        try assertField(.array([.double(.nan), .null]), .appendMissingElements([.double(.nan), .null, .string("a")]),
                        becomes: .array([.double(.nan), .null, .string("a")]), result: .null)
        try assertField(.string("x"), .appendMissingElements([.integer(1)]), becomes: .array([.integer(1)]), result: .null)
        try assertField(nil, .appendMissingElements([.map(["a": .integer(1)]), .map(["a": .double(1)])]),
                        becomes: .array([.map(["a": .integer(1)])]), result: .null)
        try assertField(.array([.integer(1)]), .appendMissingElements([]), becomes: .array([.integer(1)]), result: .null)
    }

    func testRemoveAllFromArray() throws {
        try assertField(.array([.integer(1), .integer(2), .double(1), .double(3), .string("1")]), .removeAllFromArray([.integer(1), .integer(3)]),
                        becomes: .array([.integer(2), .string("1")]), result: .null)
        try assertField(.array([.double(.nan), .null, .integer(0)]), .removeAllFromArray([.double(.nan), .null]),
                        becomes: .array([.integer(0)]), result: .null)
        try assertField(.integer(5), .removeAllFromArray([.integer(5)]), becomes: .array([]), result: .null)
        try assertField(nil, .removeAllFromArray([.integer(5)]), becomes: .array([]), result: .null)
    }

    func testServerTimeAndNestedField() throws {
        let (value, result) = try transform(nil, .requestTime, field: "a.b.c")
        XCTAssertEqual(value, .timestamp(commitTime))
        XCTAssertEqual(result, .timestamp(commitTime))
        let write = Write(path: rpath("c/d"), operation: .transform, transforms: [FieldTransform(field: fpath("a.b"), operation: .requestTime)])
        let outcome = try applyWrite(write, to: makeDoc("c/d", ["a": .integer(1), "z": .boolean(true)]))
        XCTAssertEqual(outcome.document?.fields, ["a": .map(["b": .timestamp(commitTime)]), "z": .boolean(true)])
    }

    func testTransformsApplyInOrderAfterTheUpdate() throws {
        let write = Write(path: rpath("c/d"), operation: .update(fields: ["n": .integer(10), "s": .string("x")], mask: nil), transforms: [
            FieldTransform(field: fpath("n"), operation: .increment(.integer(1))),
            FieldTransform(field: fpath("m"), operation: .maximum(.integer(4))),
            FieldTransform(field: fpath("arr"), operation: .appendMissingElements([.integer(1)])),
        ])
        let outcome = try applyWrite(write, to: makeDoc("c/d", ["n": .integer(100), "old": .null]))
        XCTAssertEqual(outcome.document?.fields, ["n": .integer(11), "s": .string("x"), "m": .integer(4), "arr": .array([.integer(1)])])
        XCTAssertEqual(outcome.transformResults, [.integer(11), .integer(4), .null])
    }
}

final class WriteApplyTests: XCTestCase {
    let existing = Document(path: rpath("c/d"), fields: ["a": .integer(1), "b": .integer(2), "c": .map(["d": .integer(1), "e": .integer(2)])],
                            createTime: Timestamp(microseconds: 1_000_000), updateTime: Timestamp(microseconds: 2_000_000))

    func testSetReplacesAndKeepsCreateTime() throws {
        let outcome = try applyWrite(Write(path: rpath("c/d"), operation: .update(fields: ["x": .boolean(true)], mask: nil)), to: existing)
        XCTAssertTrue(outcome.changed)
        XCTAssertEqual(outcome.document?.fields, ["x": .boolean(true)])
        XCTAssertEqual(outcome.document?.createTime, existing.createTime)
        XCTAssertEqual(outcome.document?.updateTime, commitTime)
        XCTAssertEqual(outcome.transformResults, [])
    }

    func testCreateSetsBothTimes() throws {
        let outcome = try applyWrite(Write(path: rpath("c/new"), operation: .update(fields: [:], mask: nil)), to: nil)
        XCTAssertTrue(outcome.changed)
        XCTAssertEqual(outcome.document?.createTime, commitTime)
        XCTAssertEqual(outcome.document?.updateTime, commitTime)
        XCTAssertEqual(outcome.document?.fields, [:])
    }

    func testMaskUpdatesOnlyMaskedPathsAndDeletesAbsentOnes() throws {
        let write = Write(path: rpath("c/d"), operation: .update(
            fields: ["a": .integer(10), "x": .integer(5), "c": .map(["e": .integer(20), "f": .integer(30)])],
            mask: [fpath("a"), fpath("b"), fpath("c.d"), fpath("c.f"), fpath("nope")]))
        let outcome = try applyWrite(write, to: existing)
        // a set, b deleted (masked but absent), c.d deleted, c.e untouched (not masked), c.f set, x ignored (not masked).
        XCTAssertEqual(outcome.document?.fields, ["a": .integer(10), "c": .map(["e": .integer(2), "f": .integer(30)])])
    }

    func testMaskThroughANonMapReplacesIt() throws {
        let write = Write(path: rpath("c/d"), operation: .update(fields: ["a": .map(["z": .integer(1)])], mask: [fpath("a.z")]))
        XCTAssertEqual(try applyWrite(write, to: existing).document?.fields["a"], .map(["z": .integer(1)]))
    }

    func testMaskOnMissingDocumentCreatesIt() throws {
        let write = Write(path: rpath("c/d"), operation: .update(fields: ["a": .integer(1)], mask: [fpath("a"), fpath("b")]))
        let outcome = try applyWrite(write, to: nil)
        XCTAssertEqual(outcome.document?.fields, ["a": .integer(1)])
        XCTAssertTrue(outcome.changed)
    }

    func testEmptyMaskChangesNothing() throws {
        let write = Write(path: rpath("c/d"), operation: .update(fields: ["a": .integer(9)], mask: []))
        let outcome = try applyWrite(write, to: existing)
        XCTAssertFalse(outcome.changed)
        XCTAssertEqual(outcome.document?.updateTime, existing.updateTime)
    }

    func testNoOpWriteKeepsUpdateTime() throws {
        let write = Write(path: rpath("c/d"), operation: .update(fields: existing.fields, mask: nil))
        let outcome = try applyWrite(write, to: existing)
        XCTAssertFalse(outcome.changed)
        XCTAssertEqual(outcome.document, existing)
        // A maximum that loses changes nothing either.
        let transform = Write(path: rpath("c/d"), operation: .transform, transforms: [FieldTransform(field: fpath("a"), operation: .maximum(.integer(0)))])
        let transformed = try applyWrite(transform, to: existing)
        XCTAssertFalse(transformed.changed)
        XCTAssertEqual(transformed.document?.updateTime, existing.updateTime)
        XCTAssertEqual(transformed.transformResults, [.integer(1)])
    }

    func testNoOpDetectionIsIdentityOfStoredValues() throws {
        let nan = Document(path: rpath("c/d"), fields: ["x": .double(.nan), "m": .map(["a": .array([.double(.nan)])])],
                           createTime: existing.createTime, updateTime: existing.updateTime)
        // Parsed afresh, as a client rewriting the same data sends it (no storage shared with the stored document).
        let rewritten = try Value.parseFields(json(#"{"x":{"doubleValue":"NaN"},"m":{"mapValue":{"fields":{"a":{"arrayValue":{"values":[{"doubleValue":"NaN"}]}}}}}}"#))
        let same = try applyWrite(Write(path: rpath("c/d"), operation: .update(fields: rewritten, mask: nil)), to: nan)
        XCTAssertFalse(same.changed, "rewriting NaN with NaN changes nothing")
        XCTAssertEqual(same.document?.updateTime, existing.updateTime)
        // 3 and 3.0, or 0 and -0, compare equal in queries but are different stored values.
        let int = makeDoc("c/d", ["n": .integer(3)])
        XCTAssertTrue(try applyWrite(Write(path: rpath("c/d"), operation: .update(fields: ["n": .double(3)], mask: nil)), to: int).changed)
        let zero = makeDoc("c/d", ["n": .double(0)])
        XCTAssertTrue(try applyWrite(Write(path: rpath("c/d"), operation: .update(fields: ["n": .double(-0.0)], mask: nil)), to: zero).changed)
        XCTAssertNotEqual(Value.double(0), Value.double(-0.0))
        XCTAssertEqual(Value.array([.double(.nan)]), Value.array([.double(.nan)]))
        XCTAssertNotEqual(Value.integer(1), Value.double(1))
    }

    func testDeleteAndVerify() throws {
        let deleted = try applyWrite(Write(path: rpath("c/d"), operation: .delete), to: existing)
        XCTAssertNil(deleted.document)
        XCTAssertTrue(deleted.changed)
        let deletedMissing = try applyWrite(Write(path: rpath("c/d"), operation: .delete), to: nil)
        XCTAssertNil(deletedMissing.document)
        XCTAssertFalse(deletedMissing.changed)
        let verified = try applyWrite(Write(path: rpath("c/d"), operation: .verify, precondition: Precondition(updateTime: existing.updateTime)), to: existing)
        XCTAssertFalse(verified.changed)
        XCTAssertEqual(verified.document, existing)
    }

    func testTransformOnMissingDocumentCreatesIt() throws {
        let write = Write(path: rpath("c/d"), operation: .transform, transforms: [FieldTransform(field: fpath("n"), operation: .increment(.integer(2)))])
        let outcome = try applyWrite(write, to: nil)
        XCTAssertEqual(outcome.document?.fields, ["n": .integer(2)])
        XCTAssertEqual(outcome.document?.createTime, commitTime)
    }

    func testPreconditions() throws {
        let target = docName("c/d")
        let update = Write.Operation.update(fields: [:], mask: nil)
        assertFiregateError(.notFound, contains: "No document to update: \(target)") {
            try applyWrite(Write(path: rpath("c/d"), operation: update, precondition: Precondition(exists: true)), to: nil)
        }
        assertFiregateError(.notFound, contains: "No document to delete: \(target)") {
            try applyWrite(Write(path: rpath("c/d"), operation: .delete, precondition: Precondition(exists: true)), to: nil)
        }
        assertFiregateError(.alreadyExists, contains: "Document already exists: \(target)") {
            try applyWrite(Write(path: rpath("c/d"), operation: update, precondition: Precondition(exists: false)), to: existing)
        }
        assertFiregateError(.failedPrecondition) {
            try applyWrite(Write(path: rpath("c/d"), operation: update, precondition: Precondition(updateTime: Timestamp(microseconds: 3))), to: existing)
        }
        assertFiregateError(.notFound) {
            try applyWrite(Write(path: rpath("c/d"), operation: update, precondition: Precondition(updateTime: existing.updateTime)), to: nil)
        }
        XCTAssertNoThrow(try applyWrite(Write(path: rpath("c/d"), operation: update, precondition: Precondition(updateTime: existing.updateTime)), to: existing))
        XCTAssertNoThrow(try applyWrite(Write(path: rpath("c/d"), operation: update, precondition: Precondition(exists: true)), to: existing))
        XCTAssertNoThrow(try applyWrite(Write(path: rpath("c/d"), operation: update, precondition: Precondition(exists: false)), to: nil))
        XCTAssertNoThrow(try applyWrite(Write(path: rpath("c/d"), operation: .delete, precondition: Precondition(exists: false)), to: nil))
    }

    func testResultingDocumentIsValidated() {
        let big = Value.string(String(repeating: "x", count: DocumentLimits.maxDocumentBytes))
        assertFiregateError(.invalidArgument, contains: "exceeds the maximum allowed size") {
            try applyWrite(Write(path: rpath("c/d"), operation: .update(fields: ["s": big], mask: nil)), to: nil)
        }
    }
}

final class WriteJSONTests: XCTestCase {
    func write(_ text: String) throws -> Write { try Write(json: json(text), database: testDB) }
    let target = docName("c/d")

    func testUpdateWithMaskTransformsAndPrecondition() throws {
        let parsed = try write("""
            {"update":{"name":"\(target)","fields":{"n":{"integerValue":"1"}}},
             "updateMask":{"fieldPaths":["n","m.`x y`"]},
             "updateTransforms":[{"fieldPath":"t","setToServerValue":"REQUEST_TIME"},{"fieldPath":"i","increment":{"doubleValue":1.5}}],
             "currentDocument":{"exists":true}}
            """)
        XCTAssertEqual(parsed.path, rpath("c/d"))
        XCTAssertEqual(parsed.operation, .update(fields: ["n": .integer(1)], mask: [fpath("n"), FieldPath(["m", "x y"])]))
        XCTAssertEqual(parsed.transforms, [FieldTransform(field: fpath("t"), operation: .requestTime), FieldTransform(field: fpath("i"), operation: .increment(.double(1.5)))])
        XCTAssertEqual(parsed.precondition, Precondition(exists: true))
    }

    func testOtherOperations() throws {
        XCTAssertEqual(try write(#"{"delete":"\#(target)","currentDocument":{"updateTime":"2024-01-01T00:00:00.000001Z"}}"#),
                       Write(path: rpath("c/d"), operation: .delete, precondition: Precondition(updateTime: Timestamp(rfc3339: "2024-01-01T00:00:00.000001Z"))))
        XCTAssertEqual(try write(#"{"verify":"\#(target)","currentDocument":{"exists":false}}"#),
                       Write(path: rpath("c/d"), operation: .verify, precondition: Precondition(exists: false)))
        let transform = try write("""
            {"transform":{"document":"\(target)","fieldTransforms":[
              {"fieldPath":"a","maximum":{"integerValue":"3"}},{"fieldPath":"b","minimum":{"doubleValue":1}},
              {"fieldPath":"c","appendMissingElements":{"values":[{"nullValue":null}]}},{"fieldPath":"d","removeAllFromArray":{}},
              {"field_path":"e","set_to_server_value":1}]}}
            """)
        XCTAssertEqual(transform.operation, .transform)
        XCTAssertEqual(transform.transforms.map(\.operation), [.maximum(.integer(3)), .minimum(.double(1)), .appendMissingElements([.null]), .removeAllFromArray([]), .requestTime])
        let snake = try write(#"{"update":{"name":"\#(target)"},"update_mask":{"field_paths":["a"]},"current_document":{"exists":false}}"#)
        XCTAssertEqual(snake.operation, .update(fields: [:], mask: [fpath("a")]))
        XCTAssertEqual(snake.precondition, Precondition(exists: false))
    }

    func testInvalidWrites() {
        let cases: [(String, String?)] = [
            ("[]", nil),
            ("{}", "exactly one"),
            (#"{"update":{"name":"\#(target)"},"delete":"\#(target)"}"#, "exactly one"),
            (#"{"delete":"\#(target)","updateTransforms":[]}"#, "only allowed with an update"),
            (#"{"delete":"\#(target)","updateMask":{"fieldPaths":[]}}"#, "only allowed with an update"),
            (#"{"update":{"fields":{}}}"#, "name"),
            (#"{"update":{"name":"\#(docName("c"))"}}"#, "not a document name"),
            (#"{"update":{"name":"projects/q/databases/(default)/documents/c/d"}}"#, "outside"),
            (#"{"update":{"name":"\#(target)","fields":{"__x__":{"nullValue":null}}}}"#, "reserved"),
            (#"{"update":{"name":"\#(target)","fields":{"m":{"mapValue":{"fields":{"__y__":{"nullValue":null}}}}}}}"#, "reserved"),
            (#"{"update":{"name":"\#(target)","fields":{"":{"nullValue":null}}}}"#, "empty"),
            (#"{"update":{"name":"\#(target)"},"updateMask":{"fieldPaths":["__name__"]}}"#, "reserved"),
            (#"{"update":{"name":"\#(target)"},"updateMask":{"fieldPaths":[1]}}"#, "strings"),
            (#"{"update":{"name":"\#(target)"},"currentDocument":{"exists":true,"updateTime":"2024-01-01T00:00:00Z"}}"#, "not both"),
            (#"{"update":{"name":"\#(target)"},"currentDocument":{"exists":"yes"}}"#, "boolean"),
            (#"{"update":{"name":"\#(target)"},"currentDocument":{"updateTime":"yesterday"}}"#, "RFC 3339"),
            (#"{"update":{"name":"\#(target)"},"currentDocument":5}"#, nil),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":[{"fieldPath":"a","increment":{"stringValue":"1"}}]}"#, "number"),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":[{"fieldPath":"a","maximum":{"nullValue":null}}]}"#, "number"),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":[{"fieldPath":"a"}]}"#, "no transformation"),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":[{"increment":{"integerValue":"1"}}]}"#, "fieldPath"),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":[{"fieldPath":"a","setToServerValue":"NOW"}]}"#, "REQUEST_TIME"),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":{}}"#, "list"),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":[{"fieldPath":"a","increment":{"integerValue":"1"}},{"fieldPath":"a","increment":{"integerValue":"2"}}]}"#, "more than once"),
            (#"{"transform":{"document":"\#(target)","fieldTransforms":[{"fieldPath":"a","increment":{"integerValue":"1"}},{"fieldPath":"a","maximum":{"integerValue":"2"}}]}}"#, "more than once"),
            (#"{"delete":5}"#, "document name"),
            (#"{"delete":"\#(docName("c"))"}"#, "not a document name"),
            (#"{"transform":{"fieldTransforms":[]}}"#, "document name"),
            (#"{"verify":"\#(docName("c"))"}"#, "not a document name"),
            (#"{"verify":"projects/p/databases/(default)/documents"}"#, "not a document name"),
            (#"{"transform":{"document":"\#(target)","fieldTransforms":{}}}"#, "list"),
            (#"{"update":{"name":"\#(target)"},"updateMask":{"fieldPaths":"a"}}"#, "list"),
            (#"{"update":{"name":"\#(target)"},"updateTransforms":[{"fieldPath":"a","appendMissingElements":{"values":{}}}]}"#, "list"),
        ]
        for (text, message) in cases {
            assertFiregateError(.invalidArgument, contains: message) { try write(text) }
        }
    }
}
