// `purchases.voidedpurchases.list`: the app's refunds, chargebacks and revocations, oldest first,
// 30 days back at most ("Voided Purchases API"). Read strictly, page by page.

import Reconciliation
import StrictJSON

/// One voided purchase (or one quantity-based partial refund of it).
public struct PlayVoided: Sendable, Equatable {
    public var purchaseToken: String
    public var orderID: String?
    public var purchaseTime: EpochMillis
    public var voidedTime: EpochMillis
    /// `voidedSource`: 0 user, 1 developer, 2 Google.
    public var source: Int
    /// `voidedReason`: 0 other, 1 remorse, 2 not received, 3 defective, 4 accidental purchase,
    /// 5 fraud, 6 friendly fraud, 7 chargeback, 8 unacknowledged purchase.
    public var reason: Int
    /// Units refunded by this record (a quantity-based partial refund); nil: the rest of the purchase.
    public var voidedQuantity: Int?

    /// `voidedSource`'s name in the reports; a value Google adds later is shown by its number.
    public var sourceName: String {
        let names = ["user", "developer", "google"]
        return names.indices.contains(source) ? names[source] : "source_\(source)"
    }
    /// `voidedReason`'s name in the reports; a value Google adds later is shown by its number.
    public var reasonName: String {
        let names = [
            "other", "remorse", "not_received", "defective", "accidental_purchase", "fraud", "friendly_fraud", "chargeback",
            "unacknowledged_purchase",
        ]
        return names.indices.contains(reason) ? names[reason] : "reason_\(reason)"
    }
}

/// One page of the list and where the next begins.
public struct PlayVoidedPage: Sendable, Equatable {
    public var voided: [PlayVoided]
    /// `tokenPagination.nextPageToken`; nil on the last page.
    public var nextPageToken: String?

    public init(voided: [PlayVoided], nextPageToken: String?) { (self.voided, self.nextPageToken) = (voided, nextPageToken) }

    /// Reads a 200 body. `voidedSource` and `voidedReason` come as numbers (the reference) or
    /// strings of digits (the guide's sample); both are read.
    public static func read(_ body: [UInt8]) -> Result<PlayVoidedPage, PlayGarbage> {
        PlayObject.reading(body) { (o) throws(PlayGarbage) -> PlayVoidedPage in
            var out: [PlayVoided] = []
            for v in try o.objects("voidedPurchases", limit: 1000) {
                if let kind = try v.string("kind", limit: 64), kind != "androidpublisher#voidedPurchase" {
                    throw PlayGarbage("\(v.path).kind is not androidpublisher#voidedPurchase")
                }
                let token = try v.required("purchaseToken", limit: PlayPaths.tokenLimit, allowed: PlayCharacters.isTokenCharacter)
                guard let purchased = try v.millis("purchaseTimeMillis"), let voided = try v.millis("voidedTimeMillis") else {
                    throw PlayGarbage("\(v.path) has no purchaseTimeMillis or voidedTimeMillis")
                }
                // proto3 leaves out a zero: an absent source is the user, an absent reason "other". A
                // value Google adds later is kept by its number: one new reason must not stop the sweep
                // (its records age out of Google's list in 30 days).
                let source = try v.integer("voidedSource", in: 0...1000) ?? 0
                let reason = try v.integer("voidedReason", in: 0...1000) ?? 0
                out.append(
                    PlayVoided(
                        purchaseToken: token, orderID: try v.string("orderId", limit: 64, allowed: PlayCharacters.isOrderCharacter),
                        purchaseTime: purchased, voidedTime: voided, source: Int(source), reason: Int(reason),
                        voidedQuantity: try v.integer("voidedQuantity", in: 1...1_000_000).map(Int.init)))
            }
            let next = try o.object("tokenPagination")?.string("nextPageToken", limit: 1024, allowed: PlayCharacters.isTokenCharacter)
            return PlayVoidedPage(voided: out, nextPageToken: next)
        }
    }
}
