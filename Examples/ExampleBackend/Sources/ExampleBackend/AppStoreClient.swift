import Crypto
import Foundation
import IAPEncoding
import IAPHTTP
import IAPModel
import IAPSupport

/// The backend's side of the App Store: the App Store Server API (with the ES256 JWT Apple requires) and the legacy
/// verifyReceipt endpoint. Point it at Apple's hosts in production; iapcheck points it at its mock App Store.
final class AppStoreClient: Sendable {
    struct Settings {
        var host = "127.0.0.1"
        var port = 8081
        var keyFile: String?
        var keyId: String?
        var issuerId: String?
        var sharedSecret: String?
        /// Retry on the sandbox when production answers 21007, as Apple asks. Off only to show iapcheck catching
        /// a backend that breaks App Review (`--no-sandbox-fallback`).
        var sandboxFallback = true
    }

    enum Failure: Error, CustomStringConvertible {
        case notConfigured(String)
        case http(String, Int, String)
        case transport(String, String)
        case malformed(String)
        var description: String {
            switch self {
            case .notConfigured(let what): "the App Store client is not configured: \(what)"
            case let .http(path, status, body): "App Store \(path) answered HTTP \(status): \(body)"
            case let .transport(path, why): "App Store \(path): \(why)"
            case .malformed(let what): "App Store answer malformed: \(what)"
            }
        }
    }

    let settings: Settings
    let key: P256.Signing.PrivateKey?
    private let state = Locked(State())

    /// The idle keep-alive connections, and the last API token made.
    struct State {
        var idle: [Connection] = []
        var cachedToken: (bundleId: String, token: String, expires: Int64)?
    }

    /// An idle connection of the pool.
    ///
    /// Sendable: a connection is used by one thread at a time, the one that took it out of the pool.
    struct Connection: @unchecked Sendable { let client: LoopbackHTTPClient }

    init(_ settings: Settings) throws {
        self.settings = settings
        if let file = settings.keyFile {
            key = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: file, encoding: .utf8))
        } else {
            key = nil
        }
    }

    /// A token for the App Store Server API: ES256, `kid` the key ID, claims iss/iat/exp/aud/bid; Apple refuses
    /// tokens living longer than an hour, so this one lives 20 minutes and is reused for 15.
    func token(bundleId: String) throws -> String {
        guard let key, let kid = settings.keyId, let iss = settings.issuerId else {
            throw Failure.notConfigured("--api-key, --key-id and --issuer-id are needed for App Store Server API calls")
        }
        let now = Int64(Date().timeIntervalSince1970)
        if let c = state.withLock({ $0.cachedToken }), c.bundleId == bundleId, c.expires - now > 300 { return c.token }
        struct Header: Encodable { let alg = "ES256"; let kid: String; let typ = "JWT" }
        struct Claims: Encodable {
            let iss: String; let iat: Int64; let exp: Int64; let aud = "appstoreconnect-v1"; let bid: String
        }
        let encoder = JSONEncoder()
        let h = Base64URL.encode([UInt8](try encoder.encode(Header(kid: kid))))
        let c = Base64URL.encode(
            [UInt8](try encoder.encode(Claims(iss: iss, iat: now, exp: now + 1200, bid: bundleId))))
        let signature = try key.signature(for: Data("\(h).\(c)".utf8))
        let token = "\(h).\(c).\(Base64URL.encode([UInt8](signature.rawRepresentation)))"
        state.withLock { $0.cachedToken = (bundleId, token, now + 1200) }
        return token
    }

    /// One request on a pooled keep-alive connection, run off the event loop (the client blocks).
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: Data? = nil) async throws
        -> (Int, Data)
    {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                let client =
                    self.state.withLock { $0.idle.popLast() }?.client
                    ?? LoopbackHTTPClient(host: self.settings.host, port: self.settings.port, timeout: 10)
                do {
                    let reply = try client.request(method, path, headers: headers, body: body)
                    let idle = Connection(client: client)
                    self.state.withLock { $0.idle.append(idle) }
                    continuation.resume(returning: reply)
                } catch {
                    continuation.resume(throwing: Failure.transport(path, "\(error)"))
                }
            }
        }
    }

    func apiGet<T: Decodable>(_ path: String, bundleId: String, as: T.Type) async throws -> T? {
        let (status, body) = try await request(
            "GET", path, headers: [("Authorization", "Bearer \(try token(bundleId: bundleId))")])
        if status == 404 { return nil }
        guard status == 200 else { throw Failure.http(path, status, String(decoding: body.prefix(200), as: UTF8.self)) }
        guard let value = try? JSONDecoder().decode(T.self, from: body) else { throw Failure.malformed(path) }
        return value
    }

    /// Get Transaction History (every page, following `revision`) and Get All Subscription Statuses for a chain.
    func chain(originalTransactionId otid: String, bundleId: String) async throws -> SignedDelivery? {
        var pages: [HistoryResponse] = []
        var revision: String?
        repeat {
            let query =
                revision.map { "?revision=\($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)" }
                ?? ""
            guard
                let page = try await apiGet(
                    "/inApps/v2/history/\(otid)\(query)", bundleId: bundleId, as: HistoryResponse.self)
            else {
                return nil
            }
            pages.append(page)
            revision = page.hasMore ? page.revision : nil
            if pages.count > 1000 { throw Failure.malformed("history of \(otid) has more than 1000 pages") }
        } while revision != nil
        let statuses = try await apiGet("/inApps/v1/subscriptions/\(otid)", bundleId: bundleId, as: StatusResponse.self)
        return .apiSnapshot(originalTransactionId: otid, history: pages, statuses: statuses)
    }

    struct ReceiptStatus: Decodable { let status: Int }

    /// verifyReceipt as Apple recommends: production first, the sandbox on 21007. Returns Apple's status and body.
    func verifyReceipt(_ receiptData: String) async throws -> (status: Int, body: String) {
        var request: [String: String] = ["receipt-data": receiptData]
        if let secret = settings.sharedSecret { request["password"] = secret }
        let body = try JSONEncoder().encode(request)
        var (http, reply) = try await self.request("POST", "/verifyReceipt", body: body)
        var status = (try? JSONDecoder().decode(ReceiptStatus.self, from: reply))?.status
        if http == 200, status == 21007, settings.sandboxFallback {
            (http, reply) = try await self.request("POST", "/sandbox/verifyReceipt", body: body)
            status = (try? JSONDecoder().decode(ReceiptStatus.self, from: reply))?.status
        }
        guard http == 200, let status else {
            throw Failure.http("/verifyReceipt", http, String(decoding: reply.prefix(200), as: UTF8.self))
        }
        return (status, String(decoding: reply, as: UTF8.self))
    }
}
