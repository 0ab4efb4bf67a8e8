import FiregateModel

/// What a WebChannel forward POST (or handshake) carries in its form body
/// (docs/webchannel.md, "Forward channel"): `count`, `ofs` and one `req<K>___data__` field per
/// message, map `ofs + K`; the handshake may also put the stream's logical headers first, as
/// `headers=<Name:Value\r\n…>`.
public struct WebChannelForm: Sendable, Equatable {
    /// The map id of the first message.
    public var offset: Int
    /// The messages' JSON texts, in map order.
    public var messages: [String]
    /// The stream's headers from `headers=` (handshake only), names as sent.
    public var headers: [(name: String, value: String)]

    public static func == (a: WebChannelForm, b: WebChannelForm) -> Bool {
        a.offset == b.offset && a.messages == b.messages
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    /// Most maps one POST may carry (the client sends at most 1000).
    public static let maxMessages = 1000

    /// Parses an `application/x-www-form-urlencoded` body. An empty body is a POST with no
    /// messages (a forward POST the client sends only to acknowledge).
    public static func parse(_ body: String) throws(FiregateError) -> WebChannelForm {
        var fields: [String: String] = [:]
        var headerBlock: String?
        for pair in body.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try PercentDecoding.decode(String(parts[0]), plusAsSpace: true)
            let value = parts.count > 1 ? try PercentDecoding.decode(String(parts[1]), plusAsSpace: true) : ""
            if name == "headers" {
                headerBlock = value
            } else {
                guard fields[name] == nil else { throw .invalidArgument("The WebChannel body names \(name) twice.") }
                fields[name] = value
            }
        }
        let count: Int
        if let text = fields["count"] {
            guard let number = Int(text), number >= 0, number <= maxMessages else {
                throw .invalidArgument("The WebChannel body's count must be a number of messages from 0 to \(maxMessages); it is \(text).")
            }
            count = number
        } else {
            count = 0
        }
        var offset = 0
        if let text = fields["ofs"] {
            guard let number = Int(text), number >= 0 else { throw .invalidArgument("The WebChannel body's ofs must be a map id; it is \(text).") }
            offset = number
        } else if count > 0 {
            throw .invalidArgument("The WebChannel body carries messages but no ofs (the map id of the first).")
        }
        var messages: [String] = []
        messages.reserveCapacity(count)
        for k in 0..<count {
            if fields["req\(k)_type"] == "_badmap" {
                throw .invalidArgument("Message \(offset + k) could not be encoded by the client (_badmap).")
            }
            guard let data = fields["req\(k)___data__"] else {
                throw .invalidArgument("The WebChannel body says count=\(count) but has no req\(k)___data__.")
            }
            messages.append(data)
        }
        return WebChannelForm(offset: offset, messages: messages, headers: headerBlock.map(headerLines) ?? [])
    }

    /// `Name:Value` lines separated by CRLF, split at each line's first colon (values hold
    /// colons: `Authorization:Bearer …`, app ids).
    public static func headerLines(_ block: String) -> [(name: String, value: String)] {
        block.split(separator: "\r\n", omittingEmptySubsequences: true).compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].trimmingCharacters(in: " \t")
            guard !name.isEmpty else { return nil }
            return (String(name), line[line.index(after: colon)...].trimmingCharacters(in: " \t"))
        }
    }

    /// A header's value, its name compared without case.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name.lowercased() == lowered }?.value
    }
}

extension Substring {
    func trimmingCharacters(in blanks: String) -> String {
        var text = self
        while let first = text.first, blanks.contains(first) { text = text.dropFirst() }
        while let last = text.last, blanks.contains(last) { text = text.dropLast() }
        return String(text)
    }
}
