// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "iapcheck",
    products: [
        .executable(name: "iapcheck", targets: ["iapcheck"]),
        .executable(name: "iapcheck-example-backend", targets: ["ExampleBackend"]),
        .executable(name: "iapcheck-fuzz", targets: ["IAPFuzz"]),
        .library(name: "IAPConformance", targets: ["IAPConformance"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", "4.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // Wire types (Apple's names), product catalog, policies, answers. No I/O, no crypto.
        .target(name: "IAPModel"),
        // The pure entitlement oracle (docs/semantics.md#oracle-specification). Imports only the model: a rendering or transport bug cannot hide in it.
        .target(name: "IAPOracle", dependencies: ["IAPModel"]),
        // Domain-free property engine: seeded RNG, recorded choice sequences, generic shrinking.
        .target(name: "PropertyEngine"),
        // Store simulator, history generators and the delivery schedule.
        .target(name: "IAPSimulator", dependencies: ["IAPModel", "PropertyEngine"]),
        // The test PKI, JWS renderers and the forgery kit: what the harness signs. A leaf: crypto lives here.
        .target(name: "IAPSigning", dependencies: [
            "IAPModel",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
        ]),
        // The validator protocol, the in-process transport, the reference validator (which verifies JWS itself,
        // as a real backend does) and the mutants.
        .target(name: "IAPValidators", dependencies: [
            "IAPModel",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "X509", package: "swift-certificates"),
            .product(name: "SwiftASN1", package: "swift-asn1"),
        ]),
        // The mock App Store (Server API with JWT auth, verifyReceipt, webhook posts with Apple's retries) on loopback.
        .target(name: "IAPStore", dependencies: [
            "IAPModel", "IAPValidators",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Properties, the case runner, corpus, coverage and reports.
        .target(name: "IAPConformance", dependencies: ["IAPModel", "IAPOracle", "PropertyEngine", "IAPSimulator", "IAPValidators", "IAPSigning"]),
        // Load profiles, schedules, the driver, HdrHistograms, results and gates.
        .target(name: "IAPLoad", dependencies: [
            "IAPModel", "IAPOracle", "IAPSimulator", "IAPSigning", "IAPValidators", "IAPConformance", "PropertyEngine",
            .product(name: "Histogram", package: "hdrhistogram-swift"),
            .product(name: "Yams", package: "Yams"),
        ]),
        // The command line: argument parsing and wiring only.
        .executableTarget(name: "iapcheck", dependencies: [
            "IAPConformance", "IAPModel", "IAPValidators", "IAPSigning", "IAPLoad", "IAPStore",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // An example backend a team could start from: Hummingbird routes, SQLite persistence, the reference logic.
        .executableTarget(name: "ExampleBackend", dependencies: [
            "IAPModel", "IAPValidators",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "SQLiteNIO", package: "sqlite-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Fuzz targets for every reader of outside input; a replay tool without the fuzzer (see Fuzz/README.md).
        .executableTarget(name: "IAPFuzz", dependencies: [
            "IAPModel", "IAPValidators", "IAPConformance", "IAPLoad", "IAPSigning",
        ]),
        // Test support shared by the test targets.
        .target(name: "IAPTesting", dependencies: ["IAPModel", "IAPOracle", "IAPSimulator", "IAPValidators", "IAPConformance", "PropertyEngine", "IAPSigning"]),
        .testTarget(name: "IAPModelTests", dependencies: ["IAPModel", "IAPTesting"]),
        .testTarget(name: "PropertyEngineTests", dependencies: ["PropertyEngine"]),
        .testTarget(name: "IAPSimulatorTests", dependencies: ["IAPSimulator", "IAPOracle", "IAPTesting"]),
        .testTarget(name: "IAPValidatorsTests", dependencies: ["IAPValidators", "IAPTesting", "IAPSigning"]),
        .testTarget(name: "IAPStoreTests", dependencies: [
            "IAPStore", "IAPTesting", "IAPSigning", .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "IAPLoadTests", dependencies: ["IAPLoad", "IAPTesting"]),
        .testTarget(name: "IAPSigningTests", dependencies: ["IAPSigning", "IAPValidators", "IAPTesting"]),
        .testTarget(name: "IAPConformanceTests", dependencies: ["IAPConformance", "IAPTesting", "IAPStore"]),
        .testTarget(name: "QualityTests", dependencies: ["IAPConformance", "IAPValidators", "IAPTesting"]),
    ]
)
