import FiregateModel
import XCTest

/// The SDK's value hash (docs/wire/realtime-database.md, The hash): the canonical texts are written out here
/// and their base64 SHA-1 computed independently (Python's hashlib).
final class TreeSDKHashTests: XCTestCase {
    private func node(_ json: JSON) -> TreeNode { try! TreeNodeDecoder.decode(json, at: .root, serverValues: nil) }

    func testLeavesHashTheirTypeAndValueNumbersAsIEEE754Hex() {
        // "number:3ff0000000000000"
        XCTAssertEqual(TreeSDKHash.of(node(1)), "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ=")
        XCTAssertEqual(TreeSDKHash.of(node(1.0)), "YPVfR2bXt/lcDjiQZ8pOkAd3qkQ=")
        XCTAssertEqual(TreeSDKHash.of(node("x")), "OJSeRnP1mf0vTrhq7izmWGPiNx4=")
        XCTAssertEqual(TreeSDKHash.of(node(true)), "E5z61QM0lN/U2WsOnusszCTkR8M=")
        XCTAssertEqual(TreeSDKHash.of(node(-2.5)), "eBj7htp2uFU6m+ykmQDcicyETbY=")
        XCTAssertEqual(TreeSDKHash.of(.empty), "")
    }

    func testChildrenHashInPriorityThenKeyOrder() {
        // ":a:<1>:b:<x>"
        XCTAssertEqual(TreeSDKHash.of(node(["b": "x", "a": 1])), "jRI9dwRS9sb4SWm8uuoN7+xBk4g=")
        // Keys that are 32-bit integers come first, numerically: ":9:<1>:10:<1>:a:<1>"
        XCTAssertEqual(TreeSDKHash.of(node(["a": 1, "10": 1, "9": 1])), "evCfROj4O5BuYeBWBzyApN5V/lQ=")
        // A child without priority sorts before one with: ":b:<x>:a:<priority 2, number 1>"
        XCTAssertEqual(TreeSDKHash.of(node(["a": [".value": 1, ".priority": 2], "b": "x"])), "1LXOnASpBoLveuBC4RlrAnTYHZY=")
        // The node's own priority leads: "priority:string:p::a:<1>"
        XCTAssertEqual(TreeSDKHash.of(node(["a": 1, ".priority": "p"])), "XmDTv07owVSgIxu8wWYeRPkdpXU=")
    }
}
