import XCTest
@testable import FiregateModel

final class TreeNodeWriterTests: XCTestCase {
    func testArraysWhenDenseEnough() throws {
        XCTAssertEqual(text(try node([1, 2, 3])), "[1,2,3]")
        XCTAssertEqual(text(try node(["0": "a", "2": "c"])), #"["a",null,"c"]"#)
        // The JS rule: largest key below twice the number of keys.
        XCTAssertEqual(text(try node(["0": "a", "3": "d"])), #"["a",null,null,"d"]"#)
        XCTAssertEqual(text(try node(["0": "a", "4": "d"])), #"{"0":"a","4":"d"}"#)
        XCTAssertEqual(text(try node(["1": "a"])), #"[null,"a"]"#)
        XCTAssertEqual(text(try node(["2": "a"])), #"{"2":"a"}"#)
        XCTAssertEqual(text(try node(["0": "a", "01": "b"])), #"{"0":"a","01":"b"}"#)
        XCTAssertEqual(text(try node([1, 2]), format: .export), #"{"0":1,"1":2}"#)
    }

    func testExportFormatAndPretty() throws {
        let value = try node(["b": ["x": 1, ".priority": "p"], "a": [".value": true, ".priority": 1]])
        XCTAssertEqual(text(value, format: .export), #"{"a":{".value":true,".priority":1},"b":{"x":1,".priority":"p"}}"#)
        XCTAssertEqual(text(value), #"{"a":true,"b":{"x":1}}"#)
        XCTAssertEqual(TreeNodeWriter.string(try node(["a": 1, "b": ["c": "d"]]), style: .pretty),
                       "{\n  \"a\" : 1,\n  \"b\" : {\n    \"c\" : \"d\"\n  }\n}")
    }

    func testShallow() throws {
        XCTAssertEqual(String(decoding: TreeNodeWriter.shallowBytes(try node(["a": ["b": 1], "c": 2]), style: .compact), as: UTF8.self),
                       #"{"a":true,"c":true}"#)
        XCTAssertEqual(String(decoding: TreeNodeWriter.shallowBytes(try node("x"), style: .compact), as: UTF8.self), #""x""#)
        XCTAssertEqual(String(decoding: TreeNodeWriter.shallowBytes(.empty, style: .compact), as: UTF8.self), "null")
    }

    func testNumbersPrintLikeJavaScript() throws {
        XCTAssertEqual(text(try node(["a": 1.0, "b": 0.1, "c": 1e21, "d": .int(-9_007_199_254_740_993)])),
                       #"{"a":1,"b":0.1,"c":1e+21,"d":-9007199254740993}"#)
    }

    func testETags() throws {
        XCTAssertEqual(TreeETag.of(.empty), "null_etag")
        let a = TreeETag.of(try node(["x": 1]))
        XCTAssertEqual(a, TreeETag.of(try node(["x": 1])))
        XCTAssertNotEqual(a, TreeETag.of(try node(["x": 2])))
        XCTAssertNotEqual(a, TreeETag.of(try node(["x": 1, ".priority": 1])))
        XCTAssertEqual(a.count, 28)
        // SHA-1 itself against the FIPS 180 test vectors.
        XCTAssertEqual(SHA1.hash(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined(),
                       "a9993e364706816aba3e25717850c26c9cd0d89d")
        XCTAssertEqual(SHA1.hash(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)).map { String(format: "%02x", $0) }.joined(),
                       "84983e441c3bd26ebaae4aa1f95129e5e54670f1")
    }
}
