import Foundation
import IAPModel
import IAPSubprocess
import IAPTesting
import IAPValidatorAPI
import Testing

/// The journal format both durable journals write (`serve --journal` and the example backend's SQLite table).
@Suite struct JournalEntryTests {
    @Test func everyKindOfEntryReadsBackAsWritten() {
        let config = ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: [])
        let entries: [JournalEntry] = [
            .reset(config),
            .delivery(.appTransaction(userId: "u1", signedTransaction: "h.p.s", deviceTime: 42), now: 7),
            .delivery(.appTransaction(userId: "u1", signedTransaction: "h.p.s", deviceTime: nil), now: 7),
            .delivery(.notification(signedPayload: "a.b.c"), now: 1_700_000_000_000),
            .delivery(.legacyReceipt(userId: "u2", responseBody: #"{"status":0,"note":"tab\there"}"#), now: -5),
            .delivery(.apiSnapshot(originalTransactionId: "100", history: [], statuses: nil), now: 9),
            // Text that would break a tab-separated line travels as JSON.
            .delivery(.appTransaction(userId: "user\twith tab", signedTransaction: "h.p.s", deviceTime: 1), now: 2),
            .delivery(.legacyReceipt(userId: "u3", responseBody: "{\n\"status\": 0\r\n}"), now: 3),
            .delivery(.notification(signedPayload: "a.b\nc"), now: 4),
        ]
        for e in entries {
            #expect(!e.line.contains("\n"))
            #expect(JournalEntry(line: e.line) == e, "\(e.line.prefix(60))")
        }
    }

    @Test func aTornOrForeignLineIsNoEntry() {
        let whole = JournalEntry.delivery(.notification(signedPayload: "a.b.c"), now: 3).line
        #expect(JournalEntry(line: "") == nil)
        #expect(JournalEntry(line: "N\t3") == nil)
        #expect(
            JournalEntry(line: String(JournalEntry.reset(.init(catalog: .standard, policy: .default)).line.dropLast(3)))
                == nil)
        #expect(JournalEntry(line: #"{"type":"reset"}"#) == nil)
        #expect(JournalEntry(line: whole) != nil)
    }
}

/// `serve --journal` replays whole lines only: a line without its newline was torn by a kill mid-write, and was never
/// acknowledged.
@Suite struct ServeJournalReplayTests {
    final class Recorder: Validator, @unchecked Sendable {  // Sendable: used by one thread, the serving one
        var resets = 0, deliveries = 0
        var name: String { "recorder" }
        func reset(_ config: ValidatorConfig) throws(ValidatorFailure) { resets += 1 }
        func deliver(_ delivery: SignedDelivery, now: Millis) throws(ValidatorFailure) -> DeliveryVerdict {
            deliveries += 1
            return .accepted
        }
        func entitlements(_ query: EntitlementQuery) throws(ValidatorFailure) -> EntitlementAnswer {
            EntitlementAnswer(products: [], groups: [], consumables: [])
        }
    }

    @Test func aTornLastLineIsNotReplayed() throws {
        let path = Scratch.url.appendingPathComponent("journal-torn-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let config = ValidatorConfig(catalog: .standard, policy: .default, trustedRoots: [])
        let whole = [
            JournalEntry.reset(config), .delivery(.notification(signedPayload: "a.b.c"), now: 1),
        ].map { $0.line + "\n" }.joined()
        let torn = JournalEntry.delivery(.notification(signedPayload: "d.e.f"), now: 2).line
        try Data((whole + torn.dropLast(2)).utf8).write(to: URL(fileURLWithPath: path))
        let recorder = Recorder()
        let null = try #require(FileHandle(forUpdatingAtPath: "/dev/null"))
        WireProtocol.serve(recorder, journal: path, input: null, output: null)
        #expect(recorder.resets == 1)
        #expect(recorder.deliveries == 1)
    }
}
