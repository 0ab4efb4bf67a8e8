@testable import FiregateEdge
import FiregateModel
import XCTest

/// The SDK's event rules (docs/wire/realtime-database.md, Events): order within one operation, merging,
/// synthesized moves, limit windows and the `value` rule.
final class TreeEventGeneratorTests: XCTestCase {
    func events(_ old: String, _ new: String, query: TreeQuery? = nil, wasComplete: Bool = true, isComplete: Bool = true) -> [String] {
        let before = TreeViewState(data: node(old), query: query, complete: wasComplete)
        let after = TreeViewState(data: node(new), query: query, complete: isComplete)
        return summary(TreeEventGenerator.events(from: before, to: after, key: "loc"))
    }

    func testOneOperationRaisesRemovedAddedMovedChangedThenValue() {
        let result = events(#"{"a":1,"b":2,"c":3}"#, #"{"b":5,"c":3,"d":0,"e":4}"#, query: byValue)
        XCTAssertEqual(result, [
            "child_removed a 1 -",
            "child_added d 0 -", "child_added e 4 c",
            "child_moved b 5 e",
            "child_changed b 5 e",
            #"value loc {"b":5,"c":3,"d":0,"e":4} -"#,
        ])
    }

    func testEventsOfOneTypeFollowTheQueryOrder() {
        let result = events("null", #"{"x":3,"y":1,"z":2}"#, query: byValue)
        XCTAssertEqual(Array(result.prefix(3)), ["child_added y 1 -", "child_added z 2 y", "child_added x 3 z"])
    }

    func testRemovedThenAddedIsAChangeAndAddedThenRemovedIsNothing() {
        // Within one operation the child ends with a different value: one change, no removal.
        XCTAssertEqual(events(#"{"a":1}"#, #"{"a":2}"#), ["child_changed a 2 -", #"value loc {"a":2} -"#])
        // A child that came and went within one operation leaves no trace.
        XCTAssertEqual(events(#"{"a":1}"#, #"{"a":1}"#), [])
    }

    func testAChangeThatKeepsTheIndexedValueDoesNotMove() {
        let ordered = TreeQuery(index: .child(path("score")))
        XCTAssertEqual(events(#"{"a":{"score":1,"n":"x"}}"#, #"{"a":{"score":1,"n":"y"}}"#, query: ordered),
                       [#"child_changed a {"n":"y","score":1} -"#, #"value loc {"a":{"n":"y","score":1}} -"#])
    }

    func testAChildEnteringAFullWindowPushesOneOutRemovalFirst() {
        let lastTwo = TreeQuery(index: .value, limit: .last(2))
        XCTAssertEqual(events(#"{"a":1,"b":2,"c":3}"#, #"{"a":1,"b":2,"c":3,"d":4}"#, query: lastTwo),
                       ["child_removed b 2 -", "child_added d 4 c", #"value loc {"c":3,"d":4} -"#])
    }

    func testValueOnlyForACompleteViewThatChangedOrBecameComplete() {
        XCTAssertEqual(events("null", #"{"a":1}"#, wasComplete: false, isComplete: false), ["child_added a 1 -"])
        XCTAssertEqual(events(#"{"a":1}"#, #"{"a":1}"#, wasComplete: false, isComplete: true), [#"value loc {"a":1} -"#])
        XCTAssertEqual(events("null", "null", wasComplete: false, isComplete: true), ["value loc null -"])
        XCTAssertEqual(events("5", "6"), ["value loc 6 -"])
        XCTAssertEqual(events("5", "5"), [])
    }

    func testAPriorityChangeRaisesValue() {
        XCTAssertEqual(events(#"{".value":1,".priority":1}"#, #"{".value":1,".priority":2}"#), ["value loc 1 -"])
    }

    func testInitialEventsAreChildrenInOrderThenValueWhenComplete() {
        let state = TreeViewState(data: node(#"{"x":2,"y":1}"#), query: byValue, complete: true)
        XCTAssertEqual(summary(state.initialEvents(key: "loc")), ["child_added y 1 -", "child_added x 2 y", #"value loc {"x":2,"y":1} -"#])
        let partial = TreeViewState(data: node(#"{"x":2}"#), query: nil, complete: false)
        XCTAssertEqual(summary(partial.initialEvents(key: "loc")), ["child_added x 2 -"])
    }
}
