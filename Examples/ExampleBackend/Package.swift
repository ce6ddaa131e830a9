// swift-tools-version:6.0
import PackageDescription

// The example backend, a package of its own (as a team's backend is): Hummingbird routes, SQLite persistence, an App
// Store client and iapcheck's reference logic. Built apart from iapcheck, so that iapcheck's own build and
// `swift test` do without a server framework:
//   swift build --package-path Examples/ExampleBackend
// puts `iapcheck-example-backend` in Examples/ExampleBackend/.build/debug/, where Examples/http/, `iapcheck mutants`
// and the tests look for it (and in iapcheck's .build, where CI builds it).
let package = Package(
    name: "iapcheck-example-backend",
    products: [
        .executable(name: "iapcheck-example-backend", targets: ["ExampleBackend"])
    ],
    dependencies: [
        // In a team's own package: .package(url: "https://github.com/<owner>/iapcheck", from: "…").
        .package(name: "iapcheck", path: "../.."),
        .package(url: "https://github.com/apple/swift-crypto", "4.0.0"..<"5.0.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/sqlite-nio", from: "1.13.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "ExampleBackend",
            dependencies: [
                .product(name: "IAPReferenceLogic", package: "iapcheck"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
            ])
    ]
)
