import Foundation
import IAPModel
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
