// swift-tools-version:6.0
import PackageDescription

// Release builds on Linux are laid out for a small resident set (docs/benchmarks.md, "Memory"):
// every page of code the server touches stays mapped, and the kernel maps 64 KiB around each
// fault, so code that runs is put together. Firegate's own functions get sections of their own
// (dependencies keep one section per file) and the linker (lld) places those listed in
// `linker/firegate.order` first (regenerate with scripts/link-order.sh). The executable
// exports no symbols and packs its relocations, which the loader otherwise reads in full at
// start.
let releaseOnLinux = BuildSettingCondition.when(platforms: [.linux], configuration: .release)
let codeLayout: [SwiftSetting] = [.unsafeFlags(["-Xfrontend", "-function-sections"], releaseOnLinux)]
let packageRoot = String(#filePath.dropLast("Package.swift".count))
let releaseLinking: [LinkerSetting] = [.unsafeFlags([
    "-use-ld=lld",
    "-Xlinker", "--no-export-dynamic",
    "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-Xlinker", "--symbol-ordering-file=\(packageRoot)linker/firegate.order",
    "-Xlinker", "--no-warn-symbol-ordering",
], releaseOnLinux)]

let package = Package(
    name: "firegate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "firegate", targets: ["firegate"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-protobuf.git", from: "1.39.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
    ],
    targets: [
        // zlib from the system (zlib1g-dev): gzip of exports and large responses.
        .systemLibrary(name: "CZlib", path: "Sources/CZlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "FiregateModel", dependencies: [
            .product(name: "OrderedCollections", package: "swift-collections"),
        ], swiftSettings: codeLayout),
        .target(name: "FiregateStore", dependencies: [
            "FiregateModel",
            .product(name: "GRDB", package: "GRDB.swift"),
        ], swiftSettings: codeLayout),
        // The PostgreSQL implementations of the storage protocols (`--store postgresql://…`).
        .target(name: "FiregatePostgres", dependencies: [
            "FiregateModel", "FiregateStore",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "OrderedCollections", package: "swift-collections"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: codeLayout),
        .target(name: "FiregateBackend", dependencies: [
            "FiregateModel", "FiregateStore", "FiregateRules",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "DequeModule", package: "swift-collections"),
            .product(name: "OrderedCollections", package: "swift-collections"),
        ], swiftSettings: codeLayout),
        // Firestore's protobuf messages, generated from Protos/ by scripts/generate-protos.sh
        // (committed, so a build needs no protoc), and their mapping to the model.
        .target(name: "FiregateProto", dependencies: [
            "FiregateModel",
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        ], swiftSettings: codeLayout),
        .target(name: "FiregateEdge", dependencies: ["FiregateModel", "FiregateStore", "FiregateBackend"], swiftSettings: codeLayout),
        // The Realtime Database's WebSocket protocol (v5) over the tree: framing, messages and
        // one session per connection, independent of the transport.
        .target(name: "FiregateRealtime", dependencies: [
            "FiregateModel", "FiregateBackend",
            .product(name: "DequeModule", package: "swift-collections"),
        ], swiftSettings: codeLayout),
        // WebChannel (wire version 8), the web SDK's stream transport: framing, form bodies,
        // request kinds and one session's arrays and acknowledgements, independent of HTTP.
        .target(name: "FiregateWebChannel", dependencies: [
            "FiregateModel",
            .product(name: "DequeModule", package: "swift-collections"),
        ], swiftSettings: codeLayout),
        // Security rules: the Firestore and Realtime Database rules languages — parser, checker,
        // evaluator — with no I/O (documents and tree reads come in through a protocol).
        .target(name: "FiregateRules", dependencies: ["FiregateModel"], swiftSettings: codeLayout),
        // The Firebase CLI's emulator conventions: firebase.json's emulators block, .firebaserc's
        // projects, what `exec` puts in its command's environment, what the hub answers.
        .target(name: "FiregateSuite", dependencies: ["FiregateModel"], swiftSettings: codeLayout),
        // The Firebase CLI's export directory: LevelDB log files of Datastore entities, the
        // metadata files around them, the RTDB's JSON files.
        .target(name: "FiregateExport", dependencies: ["FiregateModel"], swiftSettings: codeLayout),
        .target(name: "FiregateHTTP", dependencies: [
            "FiregateModel", "FiregateStore", "FiregateBackend", "FiregateEdge", "FiregateProto", "FiregateRealtime", "FiregateRules", "FiregateWebChannel", "FiregateSuite", "FiregateExport", "CZlib",
            .product(name: "OrderedCollections", package: "swift-collections"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdHTTP2", package: "hummingbird"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "NIOHPACK", package: "swift-nio-http2"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdTLS", package: "hummingbird"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: codeLayout),
        // The rules parser under libFuzzer (scripts/fuzz-rules.sh); built plainly it replays inputs.
        // What the test targets share: seeded random numbers, bounded waits, in-memory backends.
        .target(name: "FiregateTestSupport", dependencies: ["FiregateBackend", "FiregateStore"]),
        .executableTarget(name: "firegate-rules-fuzz", dependencies: ["FiregateRules"], path: "Sources/FiregateRulesFuzz"),
        .executableTarget(name: "firegate", dependencies: [
            "FiregateHTTP", "FiregateModel", "FiregateBackend", "FiregateEdge", "FiregatePostgres", "FiregateSuite",
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: codeLayout, linkerSettings: releaseLinking),
        .testTarget(name: "FiregateModelTests", dependencies: ["FiregateTestSupport", "FiregateModel"]),
        .testTarget(name: "FiregateRulesTests", dependencies: ["FiregateTestSupport", "FiregateRules", "FiregateModel"], exclude: ["FuzzCorpus"]),
        .testTarget(name: "FiregatePostgresTests", dependencies: [
            "FiregatePostgres", "FiregateStore", "FiregateModel", "FiregateBackend",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "FiregateProtoTests", dependencies: ["FiregateProto", "FiregateModel"]),
        .testTarget(name: "FiregateRealtimeTests", dependencies: ["FiregateTestSupport", "FiregateRealtime", "FiregateBackend", "FiregateStore", "FiregateModel"]),
        .testTarget(name: "FiregateWebChannelTests", dependencies: ["FiregateWebChannel", "FiregateModel"]),
        .testTarget(name: "FiregateSuiteTests", dependencies: ["FiregateSuite", "FiregateModel"]),
        .testTarget(name: "FiregateExportTests", dependencies: ["FiregateExport", "FiregateModel"]),
        .testTarget(name: "FiregateEdgeTests", dependencies: [
            "FiregateTestSupport", "FiregateEdge", "FiregateBackend", "FiregateStore", "FiregateModel",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .testTarget(name: "FiregateBackendTests", dependencies: [
            "FiregateTestSupport", "FiregateBackend", "FiregateStore", "FiregateModel", "FiregateRules",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        .testTarget(name: "FiregateHTTPTests", dependencies: [
            "FiregateHTTP", "FiregateBackend", "FiregateEdge", "FiregateProto", "FiregateModel", "FiregateStore", "FiregateTestSupport",
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOHTTP2", package: "swift-nio-http2"),
            .product(name: "NIOHPACK", package: "swift-nio-http2"),
            .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        ]),
    ]
)
