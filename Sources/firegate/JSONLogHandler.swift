import FiregateModel
import Foundation
import Logging

/// `--log-format json`: one JSON object per line on standard error —
/// `{"time","level","label","message",<metadata>…}` — for log collectors.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let level = event.level, message = event.message, explicit = event.metadata
        var entry: JSON = [
            "time": .string(Date().ISO8601Format(Date.ISO8601FormatStyle(includingFractionalSeconds: true))),
            "level": .string(level.rawValue),
            "label": .string(label),
            "message": .string(message.description),
        ]
        for (key, value) in metadata.merging(explicit ?? [:], uniquingKeysWith: { $1 }).sorted(by: { $0.key < $1.key }) {
            entry = entry.withMember(key, JSONLogHandler.json(value))
        }
        FileHandle.standardError.write(Data(JSONWriter.bytes(entry) + [0x0A]))
    }

    static func json(_ value: Logger.Metadata.Value) -> JSON {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible):
            if let number = convertible as? any BinaryInteger, let int = Int64(exactly: number) {
                .int(int)
            } else if let number = convertible as? Double {
                .double(number)
            } else {
                .string(convertible.description)
            }
        case .array(let items): .array(items.map(json))
        case .dictionary(let members):
            members.sorted { $0.key < $1.key }.reduce(JSON.object([:])) { $0.withMember($1.key, json($1.value)) }
        }
    }
}
