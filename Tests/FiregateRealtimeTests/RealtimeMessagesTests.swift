import FiregateBackend
import FiregateModel
import FiregateRealtime
import XCTest

/// Reading requests and the query object; writing pushes and replies.
final class RealtimeMessagesTests: XCTestCase {
    private func inbound(_ text: String) -> RealtimeInbound { RealtimeInbound(Array(text.utf8)) }

    func testEnvelopesAreReadAsRequestsControlsOrErrors() {
        XCTAssertEqual(inbound(#"{"t":"d","d":{"r":3,"a":"q","b":{"p":"/a","h":""}}}"#),
                       .request(number: 3, action: "q", body: ["p": "/a", "h": ""]))
        XCTAssertEqual(inbound(#"{"t":"c","d":{"t":"p","d":{}}}"#), .control(type: "p", data: [:]))
        XCTAssertEqual(inbound(#"{"t":"d","d":{"r":4,"b":{}}}"#), .request(number: 4, action: "", body: [:]))
        guard case .unanswerable = inbound(#"{"t":"d","d":{"a":"q","b":{}}}"#) else { return XCTFail("no r") }
        guard case .unanswerable = inbound(#"[1]"#) else { return XCTFail("not an envelope") }
        guard case .unanswerable = inbound(#"{"t":"z","d":{}}"#) else { return XCTFail("unknown type") }
        guard case .malformed = inbound("{nope") else { return XCTFail("not JSON") }
    }

    func testQueryObjectsMapToTreeQueries() throws {
        let lastTwo = try RealtimeQueryObject.parse(["i": ".value", "l": 2, "vf": "r"])
        XCTAssertEqual(lastTwo, TreeQuery(index: .value, limit: .last(2)))
        let range = try RealtimeQueryObject.parse(["i": "a/b", "sp": 1, "sn": "k", "sin": false, "ep": "z", "en": "[MAX_NAME]"])
        XCTAssertEqual(range, TreeQuery(index: .child(try TreePath(validating: "a/b")),
                                        start: .init(value: .int(1), key: "k", inclusive: false),
                                        end: .init(value: .string("z"), key: nil, inclusive: true)))
        // startAfter(5): the SDK's [MAX_NAME] at the start excludes every key at 5.
        let after = try RealtimeQueryObject.parse(["sp": 5, "sn": "[MAX_NAME]", "sin": false])
        XCTAssertEqual(after.index, .priority)
        XCTAssertEqual(after.start, .init(value: .int(5), key: nil, inclusive: false))
        // endBefore: [MIN_NAME] at the end.
        XCTAssertEqual(try RealtimeQueryObject.parse(["i": ".key", "ep": "m", "en": "[MIN_NAME]"]).end,
                       .init(value: .string("m"), key: nil, inclusive: false))
        XCTAssertEqual(try RealtimeQueryObject.parse(["i": ".key", "sp": "b", "l": 3]).limit, .first(3))
        for bad: JSON in [["l": -1], ["i": 3], ["sp": ["x": 1]], ["zz": 1], ["i": ".key", "sp": 1], ["l": 1, "vf": "x"], ["sn": "a"],
                          ["i": ".priority", "sp": true], ["l": 1.5], [1]] {
            XCTAssertThrowsError(try RealtimeQueryObject.parse(bad), "\(bad)")
        }
    }

    func testPushesCarryAbsolutePathsExportValuesAndTheTag() throws {
        let node = try TreeNodeDecoder.decode(["x": [".value": 1, ".priority": 2]], at: .root, serverValues: nil)
        let location = try TreePath(validating: "/a")
        XCTAssertEqual(String(decoding: RealtimeOutbound.push(.put(try TreePath(validating: "b"), node), at: location, tag: nil), as: UTF8.self),
                       #"{"t":"d","d":{"a":"d","b":{"p":"a/b","d":{"x":{".value":1,".priority":2}}}}}"#)
        let merge = TreeStreamUpdate.patch(.root, [TreePatchEntry(path: try TreePath(validating: "c/d"), node: .empty)])
        XCTAssertEqual(String(decoding: RealtimeOutbound.push(merge, at: location, tag: 4), as: UTF8.self),
                       #"{"t":"d","d":{"a":"m","b":{"p":"a","d":{"c/d":null},"t":4}}}"#)
        XCTAssertEqual(String(decoding: RealtimeOutbound.pong, as: UTF8.self), #"{"t":"c","d":{"t":"o","d":null}}"#)
        XCTAssertEqual(String(decoding: RealtimeOutbound.reply(7, status: "ok", data: ""), as: UTF8.self), #"{"t":"d","d":{"r":7,"b":{"s":"ok","d":""}}}"#)
    }
}
