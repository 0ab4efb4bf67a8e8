import FiregateModel
import FiregateTestSupport
import Synchronization
import XCTest

@testable import FiregateHTTP

/// Keep-alives: one shared ticker for every stream kind, and nothing left on it when a stream ends.
final class KeepAliveTests: XCTestCase {
    func testTheTickerBeatsEachRegistrationUntilItIsUnregistered() async throws {
        let ticker = KeepAliveTicker(seconds: 0.01)
        let beats = Atomic(0)
        let registration = ticker.register { beats.add(1, ordering: .relaxed) }
        XCTAssertEqual(ticker.registered, 1)
        await waitUntil("a few beats") { beats.load(ordering: .relaxed) >= 3 }
        ticker.unregister(registration)
        XCTAssertEqual(ticker.registered, 0)
        // A beat already taken from the ticker may still land; after that, none.
        try await Task.sleep(for: .milliseconds(30))
        let settled = beats.load(ordering: .relaxed)
        try await Task.sleep(for: .milliseconds(60))
        XCTAssertEqual(beats.load(ordering: .relaxed), settled)
    }

    /// Edge document and tree streams and the operations stream all get `: keep-alive`, and
    /// hanging up ends the edge listeners.
    func testEveryStreamKindGetsKeepAlivesAndLetsGoWhenTheClientHangsUp() async throws {
        var options = ListenOptions()
        options.keepAliveSeconds = 0.05
        try await withServer(setup: .live, listen: options) { client, _ in
            let port = try XCTUnwrap(client.port)
            let docs = "/clients/A/v1/projects/p/databases/(default)/documents"
            let streams = [
                try RawHTTPStream(port: port, path: "\(docs)/c/a:listen"),
                try RawHTTPStream(port: port, path: "/clients/A/t.json", headers: ["Accept: text/event-stream"]),
                try RawHTTPStream(port: port, path: "/emulator/v1/events"),
            ]
            for stream in streams {
                let kept = await stream.read { $0.body.text.contains(": keep-alive\n") }
                XCTAssertTrue(kept, stream.body.text)
            }
            var state = try await client.send(.get, "/clients/A").json
            XCTAssertEqual(state?["listeners"], .int(1))
            for stream in streams { stream.disconnect() }
            let clock = ContinuousClock(), deadline = clock.now + .seconds(10)
            repeat {
                try await Task.sleep(for: .milliseconds(20))
                state = try await client.send(.get, "/clients/A").json
            } while (state?["listeners"] != .int(0) || state?["tree"]?["listeners"] != .int(0)) && clock.now < deadline
            XCTAssertEqual(state?["listeners"], .int(0), "the hung-up listener ended")
            XCTAssertEqual(state?["tree"]?["listeners"], .int(0), "the hung-up tree stream ended")
        }
    }
}
