import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Caps glibc's malloc arenas. glibc gives each thread that allocates an arena of its own, up
/// to eight per core, and each arena keeps its own freed memory; so the server's
/// resident memory kept growing for ten minutes and more after its live heap had stopped
/// (bench/soak.py, 5 minutes: live heap +0.4 MB under heaptrack, RSS +5.7 %; with two arenas
/// +1.2 %, at the same commit and GET rates). `MALLOC_ARENA_MAX` in the environment still
/// decides when set.
enum AllocatorArenas {
    /// `M_ARENA_MAX` of glibc's `<malloc.h>`, which Swift's Glibc module does not import.
    private static let arenaMax: Int32 = -8

    /// Hands the arenas' free pages back (`malloc_trim`): after the start's load, resident
    /// memory then says what the server holds, not what reading the store needed on the way.
    static func releaseFreeMemory() {
        #if canImport(Glibc)
        guard let symbol = dlsym(nil, "malloc_trim") else { return }
        typealias MallocTrim = @convention(c) (Int) -> Int32
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        #endif
    }

    static func limit(to count: Int32 = 2) {
        #if canImport(Glibc)
        guard ProcessInfo.processInfo.environment["MALLOC_ARENA_MAX"] == nil,
              let symbol = dlsym(nil, "mallopt") else { return }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        _ = unsafeBitCast(symbol, to: Mallopt.self)(arenaMax, count)
        #endif
    }
}
