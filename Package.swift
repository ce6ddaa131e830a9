// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "iapcheck",
    products: [
        .executable(name: "iapcheck", targets: ["iapcheck"]),
        .executable(name: "iapcheck-fuzz", targets: ["IAPFuzz"]),
        .executable(name: "iapcheck-loopback-probe", targets: ["LoopbackProbe"]),
        .executable(name: "iapcheck-sweeps", targets: ["Sweeps"]),
        // For a team's own `swift test`: the checker, the Validator protocol its service implements, and the model
        // (catalog, transactions, answers). See Examples/SwiftPackage.
        .library(name: "IAPConformance", targets: ["IAPConformance", "IAPValidatorAPI", "IAPModel"]),
        // For the example backend (Examples/ExampleBackend, a package of its own): the reference logic, its mutants'
        // switches, the loopback HTTP client and the byte helpers they share.
        .library(
            name: "IAPReferenceLogic",
            targets: [
                "IAPReference", "IAPMutants", "IAPHTTP", "IAPModel", "IAPValidatorAPI", "IAPEncoding", "IAPSupport",
            ]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", "4.0.0"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        // Wire types (Apple's names), product catalog, policies, answers. No I/O, no crypto.
        .target(name: "IAPModel", dependencies: ["IAPEncoding"]),
        // Bytes and JSON: the flat reader of the hot path, the strict reader of configuration files (and its error
        // naming the file and key), the JSON iapcheck writes, base64url, byte hashing.
        .target(name: "IAPEncoding", dependencies: ["CByteLoops"]),
        // Small shared support: the one lock primitive, shell quoting for printed commands, markup escaping for
        // reports, the crypto counters of `bench check`.
        .target(name: "IAPSupport", dependencies: ["CThreadSanitizer"]),
        // ThreadSanitizer's lock annotations, used only by a sanitizer build with -DIAPCHECK_TSAN (see its header).
        .target(name: "CThreadSanitizer"),
        // Byte loops in SIMD (base64url blocks, the JSON string scan; the scalar code in IAPEncoding does the rest,
        // and all of it elsewhere): tokens are base64url kilobytes, converted and scanned on every signature and
        // verification.
        .target(name: "CByteLoops"),
        // The CPU affinity mask (a GNU extension Swift's Glibc module leaves out): `bench check` skips its scaling
        // figure where the process may run on one CPU only.
        .target(name: "CAffinity"),
        // The pure entitlement oracle (docs/semantics.md#oracle-specification). Imports only the model and the support
        // module's lock: a rendering or transport bug cannot hide in it.
        .target(name: "IAPOracle", dependencies: ["IAPSupport", "IAPModel"]),
        // Domain-free property engine: seeded RNG, recorded choice sequences, generic shrinking.
        .target(name: "PropertyEngine"),
        // Store simulator, history generators and the delivery schedule.
        .target(name: "IAPSimulator", dependencies: ["IAPSupport", "IAPModel", "PropertyEngine"]),
        // The test PKI, JWS renderers and the forgery kit: what the harness signs. A leaf: crypto lives here.
        .target(
            name: "IAPSigning",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]),
        // The validator protocol every transport implements, its failures and the fault profile: no crypto, no I/O.
        .target(name: "IAPValidatorAPI", dependencies: ["IAPEncoding", "IAPModel"]),
        // JWS and X.509 chain verification as Apple's libraries do it, with a cache of chain verdicts.
        .target(
            name: "IAPVerification",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPModel",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]),
        // The reference validator: a backend's logic written to the oracle's rules (it verifies JWS itself, as a real
        // backend does), its thread-safe wrapper and the correct variants that read Apple's leeway differently.
        .target(name: "IAPReference", dependencies: ["IAPModel", "IAPValidatorAPI", "IAPVerification"]),
        // The mutants: the reference with one real-world mistake each (docs/mistakes.md).
        .target(
            name: "IAPMutants",
            dependencies: [
                "IAPEncoding", "IAPSupport", "IAPModel", "IAPValidatorAPI", "IAPReference", "IAPVerification",
            ]),
        // What /proc says about the processes iapcheck starts (exit, descendants), so their children die with them.
        .target(name: "IAPProcess"),
        // The subprocess transport (`exec:`) and the wire protocol's server side (`iapcheck serve`).
        .target(
            name: "IAPSubprocess",
            dependencies: ["IAPEncoding", "IAPSupport", "IAPModel", "IAPValidatorAPI", "IAPProcess"]),
        // The HTTP transport (`http:`): target files, backends iapcheck starts, the loopback client, the store bridge.
        .target(
            name: "IAPHTTP", dependencies: ["IAPEncoding", "IAPSupport", "IAPModel", "IAPValidatorAPI", "IAPProcess"]),
        // The mock App Store (Server API with JWT auth, verifyReceipt, webhook posts with Apple's retries) on loopback,
        // served by IAPHTTP's own small server: iapcheck itself needs no server framework
        // (the example backend, Examples/ExampleBackend, a package of its own, does).
        .target(
            name: "IAPStore",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPModel", "IAPValidatorAPI", "IAPHTTP",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // Properties, the case runner, corpus, coverage and reports.
        .target(
            name: "IAPConformance",
            dependencies: [
                "IAPEncoding", "IAPSupport", "IAPModel", "IAPOracle", "PropertyEngine", "IAPSimulator",
                "IAPValidatorAPI", "IAPSigning",
            ]),
        // Load profiles, schedules, the driver, HdrHistograms, results and gates.
        .target(
            name: "IAPLoad",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPModel", "IAPOracle", "IAPSimulator", "IAPSigning", "IAPValidatorAPI", "PropertyEngine",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Yams", package: "Yams"),
            ]),
        // The benchmarks behind `iapcheck bench`: measurement loops and the trivial endpoint wrk and the driver share.
        .target(
            name: "IAPBench",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPModel", "IAPValidatorAPI", "IAPVerification", "IAPReference", "IAPSigning", "IAPConformance",
                "IAPLoad", "IAPHTTP", "IAPProcess", "PropertyEngine", "CAffinity",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // The command line: argument parsing and wiring only.
        .executableTarget(
            name: "iapcheck",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPConformance", "IAPModel", "IAPValidatorAPI", "IAPVerification", "IAPReference", "IAPMutants",
                "IAPSubprocess", "IAPHTTP", "IAPProcess",
                "IAPSigning", "IAPLoad", "IAPStore", "IAPBench",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // Fuzz targets for every reader of outside input; a replay tool without the fuzzer (see Fuzz/README.md).
        .executableTarget(
            name: "IAPFuzz",
            dependencies: [
                "IAPEncoding",
                "IAPModel", "IAPValidatorAPI", "IAPVerification", "IAPReference", "IAPHTTP", "IAPSubprocess",
                "IAPConformance", "IAPLoad",
                "IAPSigning",
            ]),
        // The loopback HTTP server alone in a process, for its abuse tests (and their ThreadSanitizer build in CI).
        .executableTarget(name: "LoopbackProbe", dependencies: ["IAPHTTP"]),
        // The harness's long self-checks (the oracle against the truth, the reference under every policy, every
        // mutant caught and shrunk): a share in `swift test`, whole in `iapcheck-sweeps`, which CI builds in release.
        .target(
            name: "IAPSweeps",
            dependencies: [
                "IAPSupport", "IAPModel", "IAPOracle", "IAPSimulator", "IAPValidatorAPI", "IAPReference", "IAPMutants",
                "IAPConformance", "PropertyEngine",
            ]),
        .executableTarget(name: "Sweeps", dependencies: ["IAPSupport", "IAPSweeps"]),
        // Test support shared by the test targets.
        .target(
            name: "IAPTesting",
            dependencies: [
                "IAPModel", "IAPOracle", "IAPSimulator", "IAPValidatorAPI", "IAPReference", "IAPMutants",
                "IAPSubprocess", "IAPHTTP",
                "IAPConformance", "PropertyEngine", "IAPSigning",
            ]),
        .testTarget(name: "IAPModelTests", dependencies: ["IAPEncoding", "IAPSupport", "IAPModel", "IAPTesting"]),
        // One example per oracle rule, as the specification's examples (Build, in IAPTesting, writes the payloads).
        .testTarget(name: "IAPOracleTests", dependencies: ["IAPModel", "IAPOracle", "IAPTesting"]),
        .testTarget(name: "PropertyEngineTests", dependencies: ["PropertyEngine"]),
        .testTarget(
            name: "IAPSimulatorTests",
            dependencies: ["IAPEncoding", "IAPSimulator", "IAPOracle", "IAPTesting", "IAPSweeps"]),
        .testTarget(
            name: "ValidatorTransportTests",
            dependencies: [
                "IAPValidatorAPI", "IAPVerification", "IAPReference", "IAPMutants", "IAPSubprocess", "IAPHTTP",
                "IAPTesting", "IAPSigning", "IAPProcess",
            ]),
        .testTarget(
            name: "IAPStoreTests",
            dependencies: [
                "IAPEncoding",
                "IAPStore", "IAPTesting", "IAPSigning", "IAPHTTP", "IAPReference",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "IAPLoadTests",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPLoad", "IAPTesting", "IAPValidatorAPI", "IAPReference", "IAPMutants", "IAPSubprocess", "IAPHTTP",
                "IAPBench", "CAffinity", .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]),
        .testTarget(
            name: "IAPSigningTests",
            dependencies: [
                "IAPEncoding",
                "IAPSigning", "IAPValidatorAPI", "IAPVerification", "IAPReference", "IAPMutants", "IAPTesting",
                .product(name: "X509", package: "swift-certificates"),
            ]),
        .testTarget(
            name: "IAPConformanceTests",
            dependencies: [
                "IAPEncoding", "IAPSupport",
                "IAPConformance", "IAPTesting", "IAPStore", "IAPReference", "IAPMutants", "IAPSubprocess", "IAPHTTP",
                "PropertyEngine", "IAPSweeps",
            ]),
        .testTarget(
            name: "QualityTests",
            dependencies: [
                "IAPSupport", "IAPConformance", "IAPReference", "IAPMutants", "IAPTesting", "IAPSweeps",
                "PropertyEngine",
            ]),
    ]
)
