@testable import FiregateEdge
import FiregateModel

/// A tree node from JSON text.
func node(_ text: String) -> TreeNode {
    try! TreeNodeDecoder.decode(try! JSONParser.parse(text), at: .root, serverValues: nil)
}

func path(_ text: String) -> TreePath { try! TreePath(validating: text) }

let byValue = TreeQuery(index: .value)

/// Events as (type, key, value JSON, previousChildKey) for comparison.
func summary(_ events: [TreeEvent]) -> [String] {
    events.map { "\($0.kind.rawValue) \($0.key ?? "-") \(TreeNodeWriter.string($0.node)) \($0.previousChildKey ?? "-")" }
}
