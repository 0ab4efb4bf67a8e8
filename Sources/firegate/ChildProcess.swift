import Foundation

/// The command `firegate exec` runs: one argument through `/bin/sh -c` (the CLI runs its script
/// through a shell), several as they are (looked up on PATH). It shares firegate's standard
/// streams and process group (a terminal's Ctrl-C reaches both), and starts with no signal blocked
/// or ignored: the thread that spawns it is a pool thread, which blocks them, and a child inherits
/// its mask.
final class ChildProcess: Sendable {
    let pid: pid_t
    private let ended: AsyncStream<Int32>

    init(command: [String], environment: [String: String]) throws {
        let argv = command.count == 1 ? ["/bin/sh", "-c", command[0]] : command
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let arguments = argv.map { strdup($0) } + [nil]
        let variables = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in arguments + variables { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, argv[0], nil, &attributes, arguments, variables)
        guard result == 0 else {
            throw StartupFailure(description: "Could not run \(argv[0]): \(String(cString: strerror(result)))")
        }
        self.pid = pid
        let (ended, end) = AsyncStream<Int32>.makeStream()
        self.ended = ended
        Thread.detachNewThread { [pid] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            let signal = status & 0x7F
            // A command killed by a signal ends firegate as a shell reports it: 128 + the signal.
            end.yield(signal == 0 ? (status >> 8) & 0xFF : 128 + signal)
            end.finish()
        }
    }

    /// Waits for the command to end; its exit status.
    func exitStatus() async -> Int32 {
        for await status in ended { return status }
        return 1
    }

    /// Passes a signal firegate received on to the command.
    func send(_ signal: Int32) {
        kill(pid, signal)
    }
}

/// Whether a port can be bound, and a free one (for port 0 in firebase.json).
enum PortProbe {
    static func isFree(host: String, port: Int) -> Bool {
        (try? bind(host: host, port: port)) != nil
    }

    static func freePort(host: String) throws -> Int {
        guard let port = try? bind(host: host, port: 0) else { throw StartupFailure(description: "No free port on \(host).") }
        return port
    }

    /// Binds a socket to the address, and closes it; the port bound.
    private static func bind(host: String, port: Int) throws -> Int {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &info) == 0, let address = info else { throw StartupFailure(description: "Not an address: \(host)") }
        defer { freeaddrinfo(info) }
        let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw StartupFailure(description: "No socket") }
        defer { close(fd) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard Glibc.bind(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else { throw StartupFailure(description: "Taken") }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return withUnsafePointer(to: &bound) { pointer in
            pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }
}
