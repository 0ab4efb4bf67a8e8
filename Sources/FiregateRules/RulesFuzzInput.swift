import FiregateModel

/// What the parser fuzzer (`FiregateRulesFuzz`, libFuzzer) does with one input, shared with the
/// tests that replay what it found: the bytes as a Firestore ruleset (loaded, and when it loads,
/// every method decided) and as Realtime Database rules (parsed, and a read and a write decided).
/// Nothing may crash or hang; what is refused must be refused with an issue.
public enum RulesFuzzInput {
    /// Runs one input; false when the loader broke its contract (refused without an ERROR issue).
    @discardableResult
    public static func run(_ bytes: [UInt8]) -> Bool {
        let source = String(decoding: bytes, as: UTF8.self)
        let (ruleset, issues) = FirestoreRulesLoader.load(source)
        guard ruleset != nil || issues.contains(where: { $0.severity == .error }) else { return false }
        if let ruleset {
            for method in RulesMethod.allCases {
                let request = FirestoreRulesRequest(method: method, path: ["databases", "(default)", "documents", "a", "b"],
                                                    auth: .map(["uid": .string("u"), "token": .map(["role": .string("x")])]),
                                                    time: .timestamp(seconds: 1, nanos: 0), resource: .map(["data": .map(["n": .int(1)])]),
                                                    requestResource: .map(["data": .map(["n": .int(2)])]))
                _ = ruleset.decide(request, reader: nil, recordsVisits: true)
            }
        }
        if let tree = try? RealtimeRuleset.parse(source) {
            let data = FuzzTree()
            let context = RealtimeRulesContext(data: data, claims: ["sub": "u"], nowMillis: 1)
            _ = tree.read(["a", "b"], context)
            _ = tree.write(["a", "b"], context)
        }
        return true
    }

    struct FuzzTree: RealtimeRulesData {
        func value(at path: [String], after: Bool) -> JSON? {
            path.isEmpty || path == ["a"] || path == ["a", "b"] ? ["b": .int(after ? 2 : 1)] : nil
        }
    }
}
