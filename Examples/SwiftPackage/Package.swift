// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "EntitlementServiceExample",
    products: [
        .library(name: "EntitlementService", targets: ["EntitlementService"])
    ],
    dependencies: [
        // In your own package: .package(url: "https://github.com/<owner>/iapcheck", from: "…").
        .package(name: "iapcheck", path: "../..")
    ],
    targets: [
        // The team's own code: no dependency on iapcheck.
        .target(name: "EntitlementService"),
        // The conformance test: iapcheck's checker drives the service through an adapter.
        .testTarget(
            name: "EntitlementServiceTests",
            dependencies: [
                "EntitlementService",
                .product(name: "IAPConformance", package: "iapcheck"),
            ]),
    ]
)
