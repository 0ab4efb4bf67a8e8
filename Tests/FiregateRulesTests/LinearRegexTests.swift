@testable import FiregateRules
import XCTest

/// The rules' regex engine: RE2 syntax, leftmost-longest matches, and time linear in the input
/// whatever the pattern.
final class LinearRegexTests: XCTestCase {
    func whole(_ pattern: String, _ text: String, insensitive: Bool = false) throws -> Bool {
        try LinearRegex(pattern, caseInsensitive: insensitive).wholeMatch(text)
    }

    func testSyntax() throws {
        let yes: [(String, String)] = [
            ("user_[0-9]+", "user_42"), ("a|b|c", "b"), ("(ab)*c", "ababc"), ("a{2,3}", "aaa"), ("a{2}", "aa"), ("a{2,}", "aaaaa"),
            ("[^a-c]x", "dx"), (#"\d+\.\d*"#, "3.14"), (#"\w+@\w+\.com"#, "me@x.com"), (#"[\s]*x"#, "  x"), ("(?:ab|cd)+", "abcdab"),
            (".*", ""), ("a?b", "b"), ("^abc$", "abc"), (#"\[x\]"#, "[x]"), ("[a-]+", "a-a"), ("[]a]+", "]a"), ("x*?y", "xxy"),
            ("é+", "éé"),
        ]
        for (pattern, text) in yes { XCTAssertTrue(try whole(pattern, text), "\(pattern) ~ \(text)") }
        let no: [(String, String)] = [
            ("user_[0-9]+", "user_42x"), ("a{2,3}", "aaaa"), ("[^a-c]x", "ax"), (".", "\n"), ("a|b", "ab"), ("abc", "ab"),
        ]
        for (pattern, text) in no { XCTAssertFalse(try whole(pattern, text), "\(pattern) !~ \(text)") }
        XCTAssertTrue(try whole("bar", "BAR", insensitive: true))
        XCTAssertTrue(try LinearRegex("o+").firstMatch(in: "foo"))
        XCTAssertFalse(try LinearRegex("^o").firstMatch(in: "foo"))
    }

    func testMatchesAreLeftmostLongest() throws {
        XCTAssertEqual(try LinearRegex("a+|b").ranges(in: "baaab"), [0..<1, 1..<4, 4..<5])
        XCTAssertEqual(try LinearRegex("x*").ranges(in: "ab"), [0..<0, 1..<1, 2..<2])
        XCTAssertEqual(try LinearRegex("ab|abcd").ranges(in: "abcd"), [0..<4])
    }

    func testWhatRE2RefusesIsRefused() {
        for bad in ["(?=x)", "(?!x)", #"(a)\1"#, "(ab", "ab)", "[ab", "*a", #"a\"#, "a{5,2}", "a{2000}", "[z-a]"] {
            XCTAssertThrowsError(try LinearRegex(bad), bad)
        }
        XCTAssertThrowsError(try LinearRegex("(((a{1000}){1000}){1000})"))  // the program would be too large
    }

    /// Patterns that make a backtracking engine take exponential time finish here in one pass.
    func testPathologicalPatternsStayLinear() throws {
        let long = String(repeating: "a", count: 50_000) + "b"
        XCTAssertFalse(try LinearRegex("(a+)+$").wholeMatch(long))
        XCTAssertFalse(try LinearRegex("(a|aa)*c").firstMatch(in: long))
        XCTAssertFalse(try LinearRegex("(a*)*c").wholeMatch(long))
        XCTAssertTrue(try LinearRegex("(a|a)*b").wholeMatch(long))
    }
}
