/// The fast path's connection state, NIO style: the handler reports what happened and does what
/// the returned action says. A connection serves requests one after another; an answer may be
/// prepared off the event loop (input waits); a stream, once started, is all the connection
/// serves until it ends; once input is handed to the full HTTP/1.1 path, every byte goes there.
struct FastPathStateMachine {
    enum State: Equatable {
        case serving
        /// An answer is prepared off the event loop; input waits.
        case answering
        /// An event stream is served; input is not read.
        case streaming
        /// The full path has the connection.
        case passThrough
    }

    private(set) var state = State.serving
    /// Reading stopped while an answer was prepared and input was waiting.
    private var readPaused = false
    /// The client half-closed while an answer was prepared.
    private var inputClosedPending = false
    /// A graceful shutdown came while an answer was prepared.
    private var quiescing = false

    enum ReadAction { case forward, bufferWhileStreaming, buffer, process }

    /// Input arrived.
    func channelRead() -> ReadAction {
        switch state {
        case .passThrough: .forward
        case .streaming: .bufferWhileStreaming
        case .answering: .buffer
        case .serving: .process
        }
    }

    /// The channel asks to read: not while an answer is prepared and input already waits (the
    /// rest stays in the kernel, bounded).
    mutating func shouldRead(inputWaiting: Bool) -> Bool {
        guard state == .answering, inputWaiting else { return true }
        readPaused = true
        return false
    }

    mutating func answerStarted() { state = .answering }
    mutating func streamStarted() { state = .streaming }
    mutating func streamEnded() { if state == .streaming { state = .serving } }
    mutating func handedOver() { state = .passThrough }

    enum InputClosedAction { case endStream, forward, wait, handOver }

    /// The client half-closed: a stream ends, an answer under way finishes first, else what
    /// waits goes to the full path, which hears of the close.
    mutating func inputClosed() -> InputClosedAction {
        switch state {
        case .streaming: return .endStream
        case .passThrough: return .forward
        case .answering:
            inputClosedPending = true
            return .wait
        case .serving: return .handOver
        }
    }

    enum QuiesceAction { case shutDownStream, forward, close, none }

    /// A graceful shutdown: a stream says so and ends; the full path finishes on its own; this
    /// path closes once no answer is under way.
    mutating func quiesce() -> QuiesceAction {
        switch state {
        case .streaming: return .shutDownStream
        case .passThrough: return .forward
        case .serving, .answering:
            quiescing = true
            return closeIfQuiesced()
        }
    }

    /// After an answer: close if a shutdown waits for it (or hand the shutdown on).
    mutating func closeIfQuiesced() -> QuiesceAction {
        guard quiescing, state != .answering, state != .streaming else { return .none }
        quiescing = false
        return state == .passThrough ? .forward : .close
    }

    /// An answer prepared off the loop is ready.
    mutating func answerReady() { if state == .answering { state = .serving } }

    /// What an answer left to do once the connection went on with its input: a half-close that
    /// came meanwhile (`.endStream` or `.handOver`), and whether reading resumes. Nothing while
    /// another answer is under way.
    mutating func afterAnswer() -> (inputClosed: InputClosedAction?, resumeReading: Bool) {
        guard state != .answering else { return (nil, false) }
        var closed: InputClosedAction?
        if inputClosedPending {
            inputClosedPending = false
            closed = state == .streaming ? .endStream : .handOver
        }
        defer { readPaused = false }
        return (closed, readPaused)
    }
}
