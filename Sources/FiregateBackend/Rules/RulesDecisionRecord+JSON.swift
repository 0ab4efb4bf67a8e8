import FiregateModel
import Foundation
import FiregateRules

extension RulesDecisionRecord {
    /// The decision as `GET /emulator/v1/rules/decisions/{id}` gives it (`trace`: every rule
    /// tried with its bindings and result, each subexpression's value, the document accesses,
    /// the limits used and `debug()` output), or as one line of the decisions stream (no trace).
    public func json(trace: Bool) -> JSON {
        var json: JSON = [
            "id": .string(id), "time": .string(time.rfc3339), "service": .string(service.rawValue),
            (service == .firestore ? "project" : "namespace"): .string(scope),
            "surface": .string(caller.surface), "outcome": .string(outcome.rawValue),
        ]
        if let client = caller.client { json = json.withMember("client", .string(client)) }
        json = json.withMember("uid", caller.identity.uid.map(JSON.string) ?? .null)
        if !message.isEmpty { json = json.withMember("message", .string(message)) }
        let lines = trace ? source.split(separator: "\n", omittingEmptySubsequences: false) : []
        json = json.withMember("evaluations", .array(evaluations.map { $0.json(trace: trace, lines: lines) }))
        if trace { json = json.withMember("auth", RulesValue.auth(claims: caller.claims).expressionValue) }
        return json
    }
}

extension RulesDecisionRecord.Evaluation {
    func json(trace: Bool, lines: [Substring]) -> JSON {
        var json: JSON = ["method": .string(method), "path": .string(path), "allowed": .bool(allowed)]
        func line(_ number: Int) -> JSON {
            number >= 1 && number <= lines.count ? .string(lines[number - 1].trimmingCharacters(in: .whitespaces)) : .null
        }
        switch detail {
        case .firestore(let input, let accesses):
            // The decision is made again from what it read: the same outcome, with every value.
            let decision = input.replay(accesses)
            let request = input.request.value, resource = input.request.resource
            json = json.withMember("rules", .array(decision.outcomes.map { outcome in
                var rule: JSON = ["line": .int(Int64(outcome.line)), "result": .string(outcome.result), "granted": .bool(outcome.granted)]
                if !outcome.bindings.isEmpty {
                    rule = rule.withMember("bindings", outcome.bindings.keys.sorted().reduce(JSON.object([:])) { $0.withMember($1, .string(outcome.bindings[$1]!)) })
                }
                return trace ? rule.withMember("source", line(outcome.line)) : rule
            }))
            guard trace else { return json }
            json = json.withMember("request", request.expressionValue).withMember("resource", resource.expressionValue)
            json = json.withMember("expressions", .array(decision.visits.map { visit in
                var item: JSON = ["line": .int(Int64(visit.position.line)), "column": .int(Int64(visit.position.column))]
                switch visit.result {
                case .success(let value): item = item.withMember("value", value.expressionValue)
                case .failure(let error): item = item.withMember("error", .string(error.message))
                }
                return item
            }))
            json = json.withMember("accesses", .array(decision.accesses.map { access in
                ["path": .string("/" + access.path.joined(separator: "/")), "call": .string(access.after ? "getAfter" : "get"),
                 "found": .bool(access.found)]
            }))
            json = json.withMember("limits", [
                "documentAccesses": .int(Int64(decision.accessCalls)), "expressions": .int(Int64(decision.expressionsEvaluated)),
            ])
            json = json.withMember("debug", .array(decision.debugOutput.map(JSON.string)))
        case .realtime(let decision):
            json = json.withMember("rules", .array(decision.outcomes.map { outcome in
                ["kind": .string(outcome.kind), "location": .string(outcome.location), "source": .string(outcome.source),
                 "result": .string(outcome.result)]
            }))
        }
        return json
    }
}
