import HTTPTypes

extension HTTPField.Name {
    /// `Firegate-Rules-Decision: <id>[, <id>…]` on every answer the rules judged: the ids of
    /// the decisions, each traced at `/emulator/v1/rules/decisions/{id}`.
    static let rulesDecision = HTTPField.Name("Firegate-Rules-Decision")!
}

extension HTTPFields {
    mutating func rulesDecisions(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        self[.rulesDecision] = ids.joined(separator: ", ")
    }
}
