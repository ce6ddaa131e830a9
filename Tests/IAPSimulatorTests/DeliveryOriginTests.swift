import Foundation
import IAPEncoding
import IAPModel
import IAPSimulator
import Testing

/// Delivery origins are enums in code and text in corpus files: every label a corpus file holds reads back to the
/// origin that wrote it, so saved counterexamples keep their timelines and their property attribution.
@Suite struct DeliveryOriginTests {
    @Test func everyOriginReadsBackFromItsText() throws {
        var origins: [DeliveryOrigin] = [
            .app, .appResubmit, .legacyReceipt, .notification, .duplicate, .apiReconcile(lost: nil),
            .apiReconcile(lost: "DID_RENEW"), .unusual("unknown-subtype"), .other("from-a-later-version"),
        ]
        origins += NotificationRetry.offsetsHours.dropFirst().map { .retry(hours: $0) }
        origins += ForgeryClass.allCases.map { .forged($0) }
        for o in origins {
            #expect(DeliveryOrigin(o.description) == o, "\(o)")
            let json = try JSONFormat.compact().encode(o)
            #expect(String(decoding: json, as: UTF8.self) == "\"\(o.description)\"")
            #expect(try JSONDecoder().decode(DeliveryOrigin.self, from: json) == o)
        }
        #expect(DeliveryOrigin("retry+13h") == .retry(hours: 13))
        #expect(
            DeliveryOrigin("api-reconcile (notification DID_FAIL_TO_RENEW lost)")
                == .apiReconcile(lost: "DID_FAIL_TO_RENEW"))
        #expect(DeliveryOrigin("retry+soon") == .other("retry+soon"))
    }

    @Test func onlyFirstSendingsAreUnperturbed() {
        #expect(DeliveryOrigin.app.isFirstSending && DeliveryOrigin.notification.isFirstSending)
        #expect(DeliveryOrigin.legacyReceipt.isFirstSending)
        for o: DeliveryOrigin in [
            .appResubmit, .duplicate, .retry(hours: 1), .apiReconcile(lost: nil), .forged(.untrustedRoot),
        ] {
            #expect(!o.isFirstSending, "\(o)")
        }
    }

    @Test func retryOffsetsAddUpApplesDelays() {
        #expect(NotificationRetry.offsetsHours == [0, 1, 13, 37, 85, 157])
        #expect(NotificationRetry.offsetsHours.count == NotificationRetry.delaysHours.count + 1)
    }
}
