import Foundation
import IAPConformance
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSigning

/// What `send --dry-run --out DIR` writes for a team's own tests (docs/send.md#fixtures-for-your-own-tests): per delivery its signed
/// artifact (`01-notification-REFUND.notification.jws`, `02-app.transaction.jws`, an API answer or a verifyReceipt
/// body as JSON), its decoded payload, and each request the target would get (`.request.txt`, the body alone in
/// `.body`); the test PKI's root (`root.der`, `root.pem`) and `samples.json`, naming the app and the genuine JWS, as
/// `iapcheck pki sample` writes it.
struct SendFiles {
    let directory: String
    let catalog: Catalog
    private(set) var written: [String] = []
    /// The body file of each request, by delivery and request number.
    private var bodies: [Int: [Int: String]] = [:]

    init(directory: String, catalog: Catalog) {
        self.directory = directory
        self.catalog = catalog
    }

    func bodyFile(delivery k: Int, request n: Int) -> String? { bodies[k]?[n] }

    mutating func write(_ outcome: SendRun.Outcome, requests: [SentRequest], perDelivery: [Range<Int>]) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Several sends into one folder: numbered on from the last, and listed in one samples.json.
        let first = Self.numbersUsed(in: directory)
        var genuine = Self.listedGenuine(in: directory)
        for (k, sent) in outcome.sent.enumerated() {
            let name = String(format: "%02d-", first + k + 1) + Self.kind(sent.delivery.delivery)
            let (suffix, artifact) = Self.artifact(sent.signed)
            try put(name + suffix, Data(artifact.utf8))
            if suffix.hasSuffix(".jws") { genuine.append(name + suffix) }
            try put(name + ".payload.json", Self.decoded(sent.delivery.delivery))
            guard perDelivery.indices.contains(k) else { continue }
            for (n, i) in perDelivery[k].enumerated() {
                let r = requests[i]
                let tag = perDelivery[k].count == 1 ? "" : "-\(n + 1)"
                var text = "\(r.method) \(r.url)\n" + r.headers.map { "\($0.0): \($0.1)\n" }.joined()
                if let body = r.body {
                    let file = name + tag + ".body"
                    try put(file, body)
                    bodies[k, default: [:]][n] = (directory as NSString).appendingPathComponent(file)
                    text += "\n" + String(decoding: body, as: UTF8.self) + "\n"
                }
                try put(name + tag + ".request.txt", Data(text.utf8))
            }
        }
        for path in try PKIExport.export(TestPKI.harness, to: directory) { written.append(path) }
        let manifest: [String: Any] = [
            "root": "root.der", "environment": catalog.environment.rawValue, "bundleId": catalog.bundleId,
            "appAppleId": catalog.appAppleId, "genuine": genuine, "forged": [] as [Any],
        ]
        try put(
            "samples.json",
            try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys]))
    }

    /// The highest `NN-` a file of `directory` starts with (0 for none).
    static func numbersUsed(in directory: String) -> Int {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return files.compactMap { f in f.firstIndex(of: "-").flatMap { Int(f[..<$0]) } }.max() ?? 0
    }

    /// The genuine JWS files an earlier send's `samples.json` in `directory` lists.
    static func listedGenuine(in directory: String) -> [String] {
        let path = (directory as NSString).appendingPathComponent("samples.json")
        guard let data = FileManager.default.contents(atPath: path),
            let o = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [] }
        return (o["genuine"] as? [String] ?? []).filter {
            FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent($0))
        }
    }

    mutating func put(_ file: String, _ data: Data) throws {
        let path = (directory as NSString).appendingPathComponent(file)
        try data.write(to: URL(fileURLWithPath: path))
        written.append(path)
    }

    /// `notification-REFUND-PRORATED`, `app`, `api-history`, `receipt`.
    static func kind(_ d: Delivery) -> String {
        switch d {
        case .notification(let n):
            return "notification-" + n.notificationType.rawValue + (n.subtype.map { "-" + $0.rawValue } ?? "")
        case .appTransaction: return "app"
        case .apiSnapshot: return "api-history"
        case .legacyReceipt: return "receipt"
        }
    }

    /// The artifact's file suffix and text: a JWS, or the JSON an API or verifyReceipt answered.
    static func artifact(_ s: SignedDelivery) -> (String, String) {
        switch s {
        case .notification(let jws): return (".notification.jws", jws)
        case .appTransaction(_, let jws, _): return (".transaction.jws", jws)
        case .legacyReceipt(_, let body): return (".verifyReceipt.json", body)
        case .apiSnapshot(_, let history, let statuses):
            struct Answers: Encodable {
                let history: [HistoryResponse]
                let statuses: StatusResponse?
            }
            return (
                ".api.json", String(decoding: Self.pretty(Answers(history: history, statuses: statuses)), as: UTF8.self)
            )
        }
    }

    /// The decoded payload as the backend's decoder would give it: the notification, the transaction, the API's
    /// chain, the receipt's facts.
    static func decoded(_ d: Delivery) -> Data {
        switch d {
        case .notification(let n): pretty(n)
        case .appTransaction(let a): pretty(a.transaction)
        case .apiSnapshot(let s): pretty(s)
        case .legacyReceipt(let l): pretty(l)
        }
    }

    static func pretty<T: Encodable>(_ v: T) -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? e.encode(v)) ?? Data()
    }
}
