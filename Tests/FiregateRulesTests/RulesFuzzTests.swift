import FiregateModel
import FiregateTestSupport
import Foundation
@testable import FiregateRules
import XCTest

/// Seeded random sources for both rules languages — mutations of real rulesets and token soup —
/// must load or be refused with an issue, and loaded ones must decide, never crash or hang.
/// `FIREGATE_RULES_FUZZ_SEED` and `FIREGATE_RULES_FUZZ_COUNT` vary the run; what a run finds is
/// kept below as a regression case.
final class RulesFuzzTests: XCTestCase {
    static let firestoreSeeds = [
        FirestoreRulesParserTests.sampleSource,
        """
        rules_version = '2';
        service cloud.firestore {
          match /databases/{db}/documents {
            function owns(d) { let uid = request.auth.uid; return d.data.owner == uid; }
            match /posts/{id} {
              allow read: if resource.data.public == true || owns(resource);
              allow write: if request.resource.data.diff(resource.data).affectedKeys().hasOnly(['title', 'body'])
                && request.time < timestamp.value(4102444800000) && get(/databases/$(db)/documents/users/$(request.auth.uid)).data.ok;
            }
          }
        }
        """,
    ]
    static let vocabulary = ["match", "allow", "read", "write", "if", "function", "let", "return", "{", "}", "(", ")", "[", "]", ";", ",", ":",
                             "/", "/databases/{d}/documents", "/$(x)", "{x=**}", "==", "&&", "||", "!", "?", "request.auth.uid", "resource.data",
                             "'s'", "1", "2.5", "b'\\x01'", "null", "true", "in", "is", "string", ".size()", "get(", "exists(", "service",
                             "cloud.firestore", "rules_version", "=", "'2'", "/*", "*/", "//", "\n", "-", "%"]

    func mutated(_ source: String, _ random: inout SplitMix64) -> String {
        var scalars = Array(source.unicodeScalars)
        for _ in 0..<(1 + random.below(4)) where !scalars.isEmpty {
            let at = random.below(scalars.count)
            switch random.below(4) {
            case 0: scalars.remove(at: at)
            case 1: scalars.insert(contentsOf: RulesFuzzTests.vocabulary[random.below(RulesFuzzTests.vocabulary.count)].unicodeScalars, at: at)
            case 2: scalars[at] = Unicode.Scalar(UInt8(32 + random.below(95)))
            default: scalars.removeSubrange(at..<min(scalars.count, at + random.below(12)))
            }
        }
        return String(String.UnicodeScalarView(scalars))
    }

    func testFirestoreRulesSourcesNeverCrashTheLoaderOrTheDecision() {
        let env = ProcessInfo.processInfo.environment
        var random = SplitMix64(seed: UInt64(env["FIREGATE_RULES_FUZZ_SEED"] ?? "") ?? 2026)
        let count = Int(env["FIREGATE_RULES_FUZZ_COUNT"] ?? "") ?? 3000
        var loaded = 0
        for i in 0..<count {
            let source: String
            if i % 4 == 3 {
                source = (0..<random.below(40)).map { _ in RulesFuzzTests.vocabulary[random.below(RulesFuzzTests.vocabulary.count)] }.joined(separator: " ")
            } else {
                source = mutated(RulesFuzzTests.firestoreSeeds[random.below(RulesFuzzTests.firestoreSeeds.count)], &random)
            }
            let (ruleset, issues) = FirestoreRulesLoader.load(source)
            XCTAssertTrue(ruleset != nil || issues.contains { $0.severity == .error }, source)
            guard let ruleset else { continue }
            loaded += 1
            for method in RulesMethod.allCases {
                let request = FirestoreRulesRequest(method: method, path: ["databases", "(default)", "documents", "posts", "p"],
                                                    auth: .map(["uid": .string("u"), "token": .map([:])]), time: .timestamp(seconds: 1, nanos: 0),
                                                    resource: .map(["data": .map(["owner": .string("u")])]),
                                                    requestResource: .map(["data": .map(["title": .string("t")])]))
                _ = ruleset.decide(request, reader: nil)
            }
        }
        XCTAssertGreaterThan(loaded, count / 20)  // the mutations keep some rulesets loadable
    }

    func testRealtimeRulesSourcesNeverCrashTheLoaderOrTheDecision() {
        let seed = RealtimeRulesTests.rulesSource
        var random = SplitMix64(seed: 7)
        let trees = RealtimeRulesTests.Trees(before: .object(["users": .object(["u": .object(["name": .string("A")])])]),
                                             after: .object(["users": .object(["u": .object(["name": .string("B")])])]))
        for _ in 0..<2000 {
            guard let ruleset = try? RealtimeRuleset.parse(mutated(seed, &random)) else { continue }
            let context = RealtimeRulesContext(data: trees, claims: .object(["sub": .string("u")]), nowMillis: 1)
            _ = ruleset.read(["users", "u"], context)
            _ = ruleset.write(["users", "u"], context)
        }
    }

    /// The libFuzzer corpus (`scripts/fuzz-rules.sh`) and what it found, replayed: every input
    /// loads or is refused with an issue, and what loads decides.
    func testTheFuzzCorpusReplays() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("FuzzCorpus")
        var inputs = try FileManager.default.contentsOfDirectory(atPath: folder.path).map { folder.appendingPathComponent($0) }
        let crashes = folder.appendingPathComponent("crashes")
        inputs += ((try? FileManager.default.contentsOfDirectory(atPath: crashes.path)) ?? []).map { crashes.appendingPathComponent($0) }
        var replayed = 0
        for input in inputs {
            guard let data = FileManager.default.contents(atPath: input.path), !input.hasDirectoryPath, input.lastPathComponent != "crashes" else { continue }
            XCTAssertTrue(RulesFuzzInput.run([UInt8](data)), input.lastPathComponent)
            replayed += 1
        }
        XCTAssertGreaterThanOrEqual(replayed, 7)
    }

    /// Cases earlier runs found.
    func testRegressions() {
        // A path interpolation left open at the end of the source.
        XCTAssertNil(FirestoreRulesLoader.load("service cloud.firestore { match /a { allow read: if /b/$(c").ruleset)
        // A comment opened inside a match pattern.
        XCTAssertNil(FirestoreRulesLoader.load("service cloud.firestore { match /a/* { allow read; } }").ruleset)
    }
}
