import XCTest

/// Waits (bounded) until `condition` holds, yielding between checks; fails the test on timeout
/// instead of hanging it.
public func waitUntil(_ description: String, timeout: Duration = .seconds(10), file: StaticString = #filePath, line: UInt = #line,
                      _ condition: () -> Bool) async {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !condition() {
        if clock.now > deadline { return XCTFail("timed out waiting for \(description)", file: file, line: line) }
        await Task.yield()
        try? await Task.sleep(for: .milliseconds(1))
    }
}
