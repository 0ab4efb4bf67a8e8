import FiregateModel
import FiregateWebChannel
import XCTest

/// Form bodies and request kinds (docs/webchannel.md, "Requests" and "Forward channel").
final class WebChannelFormTests: XCTestCase {
    func testAHandshakeBodyCarriesTheHeadersBlockAndNumberedMessages() throws {
        let block = "X-Goog-Api-Client:gl-js/ fire/12.9.0\r\nContent-Type:text/plain\r\nX-Firebase-GMPID:1:123:web:abc\r\nAuthorization:Bearer owner\r\n"
        let body = "headers=" + encode(block) + "&count=2&ofs=0&req0___data__=" + encode(#"{"database":"projects/p/databases/(default)"}"#)
            + "&req1___data__=" + encode(#"{"removeTarget":2}"#)
        let form = try WebChannelForm.parse(body)
        XCTAssertEqual(form.offset, 0)
        XCTAssertEqual(form.messages, [#"{"database":"projects/p/databases/(default)"}"#, #"{"removeTarget":2}"#])
        XCTAssertEqual(form.header("x-firebase-gmpid"), "1:123:web:abc")  // split at the first colon only
        XCTAssertEqual(form.header("AUTHORIZATION"), "Bearer owner")
        XCTAssertEqual(form.header("X-Goog-Api-Client"), "gl-js/ fire/12.9.0")
        XCTAssertNil(form.header("x-firebase-appcheck"))
    }

    func testAnEmptyBodyCarriesNothingAndMalformedBodiesAreRefused() throws {
        XCTAssertEqual(try WebChannelForm.parse("").messages, [])
        XCTAssertEqual(try WebChannelForm.parse("count=0&ofs=3").offset, 3)
        for body in ["count=2&ofs=0&req0___data__=%7B%7D", "count=x&ofs=0", "count=1&req0___data__=%7B%7D", "count=1001&ofs=0",
                     "count=1&ofs=-1&req0___data__=%7B%7D", "count=1&ofs=0&req0_type=_badmap", "count=1&count=1&ofs=0", "count=1&ofs=0&req0___data__=%E0%A4"] {
            XCTAssertThrowsError(try WebChannelForm.parse(body), body) { error in
                XCTAssertEqual((error as? FiregateError)?.status, .invalidArgument, body)
            }
        }
    }

    func testRequestsAreToldApartByMethodTypeAndSession() throws {
        func kind(_ method: String, _ query: String) throws -> WebChannelRequest {
            try WebChannelRequest.classify(method: method, query: try WebChannelRequest.query(Substring(query)))
        }
        XCTAssertEqual(try kind("POST", "VER=8&database=projects%2Fp%2Fdatabases%2F(default)&RID=4031&CVER=22&X-HTTP-Session-Id=gsessionid&zx=k2&t=1"),
                       .handshake)
        XCTAssertEqual(try kind("POST", "VER=8&SID=abc&RID=4032&AID=3&zx=k&t=1"), .forward(session: "abc", acknowledged: 3))
        XCTAssertEqual(try kind("GET", "VER=8&RID=rpc&SID=abc&AID=0&CI=0&TYPE=xmlhttp&zx=q&t=1"),
                       .backChannel(session: "abc", acknowledged: 0, longPoll: false, timeoutMilliseconds: nil))
        XCTAssertEqual(try kind("GET", "VER=8&RID=rpc&SID=abc&AID=7&CI=1&TO=10000&TYPE=xmlhttp"),
                       .backChannel(session: "abc", acknowledged: 7, longPoll: true, timeoutMilliseconds: 10_000))
        XCTAssertEqual(try kind("POST", "VER=8&SID=abc&RID=9&TYPE=terminate&zx=1"), .terminate(session: "abc"))
        XCTAssertEqual(try kind("GET", "VER=8&SID=abc&RID=9&TYPE=terminate"), .terminate(session: "abc"))
        for (method, query) in [("GET", "VER=8&SID=abc"), ("GET", "VER=8&TYPE=xmlhttp"), ("POST", "VER=7"), ("POST", "SID=a&AID=x"),
                                ("PUT", "VER=8&SID=a"), ("POST", "TYPE=init")] {
            XCTAssertThrowsError(try kind(method, query), "\(method) \(query)")
        }
    }

    private func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-_.!~*'()")
        return text.addingPercentEncoding(withAllowedCharacters: allowed)!
    }
}
