import FiregateBackend
import FiregateModel
import FiregateProto
import Foundation

/// The Write stream the mobile and web SDKs use: a handshake that returns a stream id and
/// token, then one commit per request that carries writes, answered in order with its commit
/// time, results and a new token. A request without writes only acknowledges tokens and gets
/// no answer. A failed commit ends the stream with its status, as the SDKs expect.
struct FirestoreWriteCall {
    let backend: Backend

    func run<Body>(requests: inout GRPCMessageReader, responses: inout GRPCMessageWriter<Body>) async throws {
        guard let handshake = try await requests.next(Google_Firestore_V1_WriteRequest.self) else { return }
        let id = try FirestoreResourceName.database(handshake.database)
        let database = backend.documents.database(id)
        guard handshake.writes.isEmpty else {
            throw FiregateError.invalidArgument("The first message of a Write stream is the handshake: it must carry no writes.")
        }
        let streamID = handshake.streamID.isEmpty ? AutoID.make() : handshake.streamID
        var answered = 0
        func nextToken() -> Data {
            answered += 1
            return Data("\(streamID).\(answered)".utf8)
        }
        var opened = Google_Firestore_V1_WriteResponse()
        opened.streamID = streamID
        opened.streamToken = nextToken()
        try await responses.send(opened)
        while let request = try await requests.next(Google_Firestore_V1_WriteRequest.self) {
            if !request.database.isEmpty, try FirestoreResourceName.database(request.database) != id {
                throw FiregateError.invalidArgument("A Write stream serves one database; \(request.database) is not \(id.name).")
            }
            guard !request.writes.isEmpty else { continue }
            let result = try await DocumentCalls.commit(database, try request.restJSON())
            var response = try Google_Firestore_V1_WriteResponse(restJSON: result)
            response.streamID = streamID
            response.streamToken = nextToken()
            try await responses.send(response)
        }
    }
}
