import FiregateModel
import SwiftProtobuf

/// The bridge between gRPC messages and the REST surface's JSON. Firestore REST v1 bodies are
/// the proto3 JSON mapping of these very messages (camelCase names, int64 as strings, enums by
/// name, RFC 3339 timestamps, base64 bytes), so a request message turned into JSON is a REST
/// body, parsed by the same code with the same error messages, and a REST answer turned back
/// is the response message.
extension SwiftProtobuf.Message {
    /// This message as REST JSON.
    public func restJSON() throws(FiregateError) -> JSON {
        let bytes: [UInt8]
        do {
            bytes = try jsonUTF8Bytes()
        } catch {
            throw .invalidArgument("Invalid \(Self.protoMessageName): \(error)")
        }
        do {
            return try JSONParser.parse(bytes)
        } catch {
            throw .internal("Could not read \(Self.protoMessageName) as JSON: \(error)")
        }
    }

    /// The message a REST JSON answer describes; fields the message does not have are ignored.
    public init(restJSON json: JSON) throws(FiregateError) {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        do {
            try self.init(jsonUTF8Bytes: JSONWriter.bytes(json), options: options)
        } catch {
            throw .internal("Could not build \(Self.protoMessageName) from \(JSONWriter.string(json)): \(error)")
        }
    }
}
