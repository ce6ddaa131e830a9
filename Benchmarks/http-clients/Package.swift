// swift-tools-version:6.0
// A separate package (not built by CI): AsyncHTTPClient as a closed-loop HTTP driver, for comparing HTTP clients
// against iapcheck's own (see README.md here).
import PackageDescription

let package = Package(
    name: "http-clients",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .executableTarget(name: "ahc-bench", dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")]),
    ]
)
