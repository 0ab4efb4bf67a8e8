@testable import FiregateModel
import FiregateTestSupport
import XCTest

final class FieldPathTests: XCTestCase {
    func testParseSimpleAndQuoted() throws {
        XCTAssertEqual(try FieldPath.parse("a").segments, ["a"])
        XCTAssertEqual(try FieldPath.parse("a.b.c").segments, ["a", "b", "c"])
        XCTAssertEqual(try FieldPath.parse("`a.b`.c").segments, ["a.b", "c"])
        XCTAssertEqual(try FieldPath.parse("a.`x&y`").segments, ["a", "x&y"])
        XCTAssertEqual(try FieldPath.parse(#"`a\`b`"#).segments, ["a`b"])
        XCTAssertEqual(try FieldPath.parse(#"`a\\b`"#).segments, [#"a\b"#])
        XCTAssertEqual(try FieldPath.parse("``").segments, [""])
        XCTAssertEqual(try FieldPath.parse("__name__"), .documentID)
        XCTAssertTrue(try FieldPath.parse("__name__").isDocumentID)
        XCTAssertEqual(try FieldPath.parse("é.1").segments, ["é", "1"])
    }

    func testParseErrors() {
        for bad in ["", ".", "a.", ".a", "a..b", "`a", "a`b`", "`a`b", "`a`.", #"`a\"#] {
            assertFiregateError(.invalidArgument) { try FieldPath.parse(bad) }
        }
        let long = String(repeating: "a", count: 1501)
        assertFiregateError(.invalidArgument, contains: "1500") { try FieldPath.parse(long) }
        XCTAssertNoThrow(try FieldPath.parse(String(repeating: "a", count: 1500)))
    }

    func testCanonicalQuotesOnlyWhatNeedsIt() {
        XCTAssertEqual(FieldPath(["a", "b"]).canonical, "a.b")
        XCTAssertEqual(FieldPath(["_x9", "A_b"]).canonical, "_x9.A_b")
        XCTAssertEqual(FieldPath(["a.b"]).canonical, "`a.b`")
        XCTAssertEqual(FieldPath(["1a"]).canonical, "`1a`")
        XCTAssertEqual(FieldPath(["é"]).canonical, "`é`")
        XCTAssertEqual(FieldPath(["a b"]).canonical, "`a b`")
        XCTAssertEqual(FieldPath(["a`b"]).canonical, #"`a\`b`"#)
        XCTAssertEqual(FieldPath([#"a\b"#]).canonical, #"`a\\b`"#)
        XCTAssertEqual(FieldPath([""]).canonical, "``")
    }

    func testCanonicalRoundTrips() throws {
        for segments in [["a"], ["a.b", "c"], ["x`y", #"z\"#, "é ü"], ["", "0"], ["__name__"]] {
            let path = FieldPath(segments)
            XCTAssertEqual(try FieldPath.parse(path.canonical), path, path.canonical)
        }
    }

    func testWritablePathsRefuseReservedNames() {
        assertFiregateError(.invalidArgument, contains: "reserved") { try FieldPath.parseWritable("__name__") }
        assertFiregateError(.invalidArgument) { try FieldPath.parseWritable("a.__x__") }
        assertFiregateError(.invalidArgument) { try FieldPath.parseWritable("`____`") }
        XCTAssertNoThrow(try FieldPath.parseWritable("__a"))
        XCTAssertNoThrow(try FieldPath.parseWritable("a__"))
        XCTAssertNoThrow(try FieldPath.parseWritable("`___`"))
    }

    func testOrderingAndPrefix() {
        XCTAssertLessThan(fpath("a"), fpath("a.b"))
        XCTAssertLessThan(fpath("a.b"), fpath("b"))
        XCTAssertLessThan(fpath("B"), fpath("a"))
        XCTAssertLessThan(fpath("__name__"), fpath("a"))
        XCTAssertTrue(fpath("a").isPrefix(of: fpath("a.b")))
        XCTAssertFalse(fpath("a.b").isPrefix(of: fpath("a")))
        XCTAssertFalse(fpath("a").isPrefix(of: fpath("ab")))
    }
}

final class ResourcePathTests: XCTestCase {
    func testParse() throws {
        XCTAssertTrue(try ResourcePath.parse("").isEmpty)
        let collection = try ResourcePath.parse("cities")
        XCTAssertTrue(collection.isCollection)
        XCTAssertFalse(collection.isDocument)
        let document = try ResourcePath.parse("cities/SF/landmarks/x")
        XCTAssertTrue(document.isDocument)
        XCTAssertEqual(document.segments, ["cities", "SF", "landmarks", "x"])
        XCTAssertEqual(document.parent.canonical, "cities/SF/landmarks")
        XCTAssertEqual(document.lastSegment, "x")
        XCTAssertEqual(try ResourcePath.parse("a b/é:1").segments, ["a b", "é:1"])
    }

    func testEmptySegmentsAreRejected() {
        for bad in ["/", "a/", "/a", "a//b", "a/b/"] {
            assertFiregateError(.invalidArgument, contains: "empty") { try ResourcePath.parse(bad) }
        }
    }

    func testReservedAndDotIDs() {
        for bad in [".", "..", "a/.", "c/..", "__x__", "c/__doc__", "c/____"] {
            assertFiregateError(.invalidArgument) { try ResourcePath.parse(bad) }
        }
        for good in ["c/__a", "c/a__", "c/_x_", "c/...", "c/.a"] {
            XCTAssertNoThrow(try ResourcePath.parse(good), good)
        }
    }

    func testIDLengthLimitIs1500Bytes() {
        XCTAssertNoThrow(try ResourcePath.parse("c/" + String(repeating: "x", count: 1500)))
        assertFiregateError(.invalidArgument, contains: "1500 bytes") { try ResourcePath.parse("c/" + String(repeating: "x", count: 1501)) }
        // Bytes, not characters: 751 two-byte characters are 1502 bytes.
        assertFiregateError(.invalidArgument, contains: "1500 bytes") { try ResourcePath.parse("c/" + String(repeating: "é", count: 751)) }
    }

    func testDepthLimit() {
        let ok = (0..<ResourcePath.maxSegments).map { "s\($0)" }.joined(separator: "/")
        XCTAssertNoThrow(try ResourcePath.parse(ok))
        assertFiregateError(.invalidArgument, contains: "too deep") { try ResourcePath.parse(ok + "/extra") }
    }

    func testValidateID() {
        XCTAssertNoThrow(try ResourcePath.validateID("abc"))
        assertFiregateError(.invalidArgument, contains: "/") { try ResourcePath.validateID("a/b") }
        assertFiregateError(.invalidArgument) { try ResourcePath.validateID("") }
        assertFiregateError(.invalidArgument) { try ResourcePath.validateID("__x__") }
    }

    func testOrderIsSegmentWise() {
        let paths = ["a/b", "a/b/c/d", "a/b/c/e", "a-/b", "b/a", "b/a/a/a"].map(rpath)
        for (i, a) in paths.enumerated() {
            for b in paths[(i + 1)...] {
                XCTAssertLessThan(a, b)
                XCTAssertEqual(ResourcePath.compare(b, a), 1)
            }
        }
        XCTAssertTrue(rpath("a/b").isPrefix(of: rpath("a/b/c")))
        XCTAssertFalse(rpath("a/b").isPrefix(of: rpath("a/bc")))
    }

    func testEqualPathsHashAlikeAndDifferentOnesDiffer() {
        let a = rpath("users/u1/settings/profile")
        let b = ResourcePath(["users", "u1", "settings", "profile"])
        XCTAssertEqual(a, b)
        XCTAssertEqual(a.hashValue, b.hashValue)
        XCTAssertEqual(a.parent, rpath("users/u1/settings"))
        XCTAssertEqual(rpath("users/u1").appending("x"), rpath("users/u1/x"))
        // Same segments joined differently are different paths.
        XCTAssertNotEqual(rpath("a/bc"), ResourcePath(["a/b", "c"]))
        XCTAssertNotEqual(rpath("a/b"), rpath("a/b/c"))
        let set = Set((0..<1000).map { rpath("users/u\($0)/settings/profile") })
        XCTAssertEqual(set.count, 1000)
        XCTAssertTrue(set.contains(rpath("users/u999/settings/profile")))
        XCTAssertFalse(set.contains(rpath("users/u1000/settings/profile")))
    }

    func testSegmentsSplitAtEverySlashByte() {
        XCTAssertEqual(ResourcePath.segments(of: "a//b/"), ["a", "", "b", ""])
        XCTAssertEqual(ResourcePath.segments(of: ""), [""])
        // A combining mark after the slash does not hide it (characters would).
        XCTAssertEqual(ResourcePath.segments(of: "c/\u{301}x/é"), ["c", "\u{301}x", "é"])
    }

    func testAutoIDs() {
        var seen = Set<String>()
        for _ in 0..<200 {
            let id = AutoID.make()
            XCTAssertEqual(id.count, 20)
            XCTAssertTrue(id.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
            seen.insert(id)
        }
        XCTAssertEqual(seen.count, 200)
    }
}

final class DatabaseIDTests: XCTestCase {
    func testNames() {
        let db = DatabaseID(project: "p")
        XCTAssertEqual(db.name, "projects/p/databases/(default)")
        XCTAssertEqual(db.documentsRoot, "projects/p/databases/(default)/documents")
        XCTAssertEqual(db.resourceName(rpath("c/d")), "projects/p/databases/(default)/documents/c/d")
        XCTAssertEqual(db.resourceName(ResourcePath([])), "projects/p/databases/(default)/documents")
    }

    func testPathFromName() throws {
        let db = DatabaseID(project: "p")
        XCTAssertEqual(try db.path(fromName: "projects/p/databases/(default)/documents/c/d"), rpath("c/d"))
        XCTAssertTrue(try db.path(fromName: "projects/p/databases/(default)/documents").isEmpty)
        assertFiregateError(.invalidArgument, contains: "outside the database") {
            try db.path(fromName: "projects/q/databases/(default)/documents/c/d")
        }
        assertFiregateError(.invalidArgument, contains: "Invalid resource name") { try db.path(fromName: "c/d") }
        assertFiregateError(.invalidArgument) { try db.path(fromName: "projects/p/databases/(default)/documentsX/c") }
        assertFiregateError(.invalidArgument) { try db.path(fromName: "projects/p/databases/(default)/documents/c//d") }
        assertFiregateError(.invalidArgument) { try db.path(fromName: "projects/p/databases/(default)/document") }
        let accented = DatabaseID(project: "p", database: "bé")
        XCTAssertEqual(try accented.path(fromName: "projects/p/databases/bé/documents/c/é"), ResourcePath(["c", "é"]))
        XCTAssertEqual(accented, DatabaseID(project: "p", database: "bé"))
        XCTAssertNotEqual(accented, DatabaseID(project: "p"))
    }
}

final class TimestampTests: XCTestCase {
    func parse(_ text: String) -> Timestamp? { Timestamp(rfc3339: text) }

    func testParseAndPrint() {
        XCTAssertEqual(parse("1970-01-01T00:00:00Z"), Timestamp(seconds: 0, nanos: 0))
        XCTAssertEqual(parse("2024-01-02T03:04:05Z")?.seconds, 1_704_164_645)
        XCTAssertEqual(parse("2024-01-02t03:04:05z")?.seconds, 1_704_164_645)
        XCTAssertEqual(parse("2024-01-02T03:04:05.5Z")?.nanos, 500_000_000)
        XCTAssertEqual(parse("2024-01-02T03:04:05.123456789Z")?.nanos, 123_456_789)
        XCTAssertEqual(parse("2024-01-02T03:04:05.000000001Z")?.nanos, 1)
        XCTAssertEqual(Timestamp(seconds: 0, nanos: 0).rfc3339, "1970-01-01T00:00:00Z")
        XCTAssertEqual(Timestamp(seconds: 0, nanos: 500_000_000).rfc3339, "1970-01-01T00:00:00.500Z")
        XCTAssertEqual(Timestamp(seconds: 0, nanos: 1000).rfc3339, "1970-01-01T00:00:00.000001Z")
        XCTAssertEqual(Timestamp(seconds: 0, nanos: 1).rfc3339, "1970-01-01T00:00:00.000000001Z")
        XCTAssertEqual(Timestamp(seconds: 1_704_164_645, nanos: 120_000_000).rfc3339, "2024-01-02T03:04:05.120Z")
        XCTAssertEqual(Timestamp(microseconds: -1).rfc3339, "1969-12-31T23:59:59.999999Z")
        XCTAssertEqual(Timestamp(seconds: Timestamp.minSeconds, nanos: 0).rfc3339, "0001-01-01T00:00:00Z")
        XCTAssertEqual(Timestamp(seconds: Timestamp.maxSeconds, nanos: 999_999_999).rfc3339, "9999-12-31T23:59:59.999999999Z")
    }

    func testOffsets() {
        XCTAssertEqual(parse("2024-01-02T05:04:05+02:00"), parse("2024-01-02T03:04:05Z"))
        XCTAssertEqual(parse("2024-01-01T23:34:05-03:30"), parse("2024-01-02T03:04:05Z"))
        XCTAssertEqual(parse("2024-01-02T03:04:05.25+00:00"), parse("2024-01-02T03:04:05.250Z"))
        XCTAssertNil(parse("2024-01-02T03:04:05+0200"))
        XCTAssertNil(parse("2024-01-02T03:04:05+02"))
        XCTAssertNil(parse("2024-01-02T03:04:05+02:00Z"))
        XCTAssertNil(parse("2024-01-02T03:04:05+24:00"), "offset hours are 00-23")
        XCTAssertNil(parse("2024-01-02T03:04:05+99:99"))
        XCTAssertNil(parse("2024-01-02T03:04:05-01:60"), "offset minutes are 00-59")
        XCTAssertEqual(parse("2024-01-02T03:04:05+23:59")?.seconds, 1_704_164_645 - 86_340)
    }

    func testInvalidDates() {
        for bad in ["", "2024-01-02", "2024-01-02T03:04Z", "2024-01-02 03:04:05Z", "2024-01-02T03:04:05", "2024-13-01T00:00:00Z",
                    "2024-00-01T00:00:00Z", "2024-01-00T00:00:00Z", "2024-01-32T00:00:00Z", "2024-04-31T00:00:00Z",
                    "2023-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2024-01-02T24:00:00Z", "2024-01-02T23:60:00Z",
                    "2024-01-02T23:59:60Z", "2024-01-02T03:04:05.Z", "2024-01-02T03:04:05.1234567890Z", "0000-12-31T23:59:59Z",
                    "2024-1-02T03:04:05Z", "2024-01-02T03:04:05ZZ", "+2024-01-02T03:04:05Z", "2024/01/02T03:04:05Z"] {
            XCTAssertNil(parse(bad), bad)
        }
        XCTAssertNotNil(parse("2024-02-29T00:00:00Z"))
        XCTAssertNotNil(parse("2000-02-29T00:00:00Z"))
        XCTAssertNotNil(parse("0001-01-01T00:00:00Z"))
        XCTAssertNotNil(parse("9999-12-31T23:59:59.999999999Z"))
        // An offset that moves a valid local time outside the supported range.
        XCTAssertNil(parse("0001-01-01T00:00:00+01:00"))
        XCTAssertNil(parse("9999-12-31T23:59:59-01:00"))
    }

    func testCivilRoundTripOverManyDays() {
        var generator = SplitMix64(seed: 3)
        for _ in 0..<3000 {
            let seconds = Int64.random(in: Timestamp.minSeconds...Timestamp.maxSeconds, using: &generator)
            let nanos = Int32.random(in: 0..<1_000_000_000, using: &generator)
            let t = Timestamp(seconds: seconds, nanos: nanos)
            XCTAssertEqual(parse(t.rfc3339), t, t.rfc3339)
        }
    }

    func testMicrosecondsAndTruncation() {
        let t = Timestamp(seconds: 5, nanos: 123_456_789)
        XCTAssertEqual(t.microseconds, 5_123_456)
        XCTAssertEqual(t.milliseconds, 5123)
        XCTAssertEqual(t.truncatedToMicroseconds, Timestamp(seconds: 5, nanos: 123_456_000))
        XCTAssertEqual(Timestamp(microseconds: -1_500_000), Timestamp(seconds: -2, nanos: 500_000_000))
        XCTAssertEqual(Timestamp(milliseconds: 1500), Timestamp(seconds: 1, nanos: 500_000_000))
        XCTAssertLessThan(Timestamp(seconds: 1, nanos: 5), Timestamp(seconds: 1, nanos: 6))
        XCTAssertLessThan(Timestamp(seconds: -1, nanos: 999_999_999), Timestamp(seconds: 0, nanos: 0))
    }
}
