// `purchases.productsv2.getproductpurchasev2`: what Google says of one purchase token (a one-time
// product). Read strictly; a body that fails a check is garbage, retried, never believed.

import Reconciliation
import StrictJSON

/// One purchase as Google answers it (ProductPurchaseV2).
public struct PlayPurchase: Sendable, Equatable {
    /// `purchaseStateContext.purchaseState`. Only `purchased` is a payment.
    public enum State: String, Sendable {
        case purchased = "PURCHASED", pending = "PENDING", cancelled = "CANCELLED"
    }

    /// `acknowledgementState`; `unspecified` when Google leaves it out.
    public enum Acknowledgement: String, Sendable {
        case pending = "ACKNOWLEDGEMENT_STATE_PENDING", acknowledged = "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"
        case unspecified = "ACKNOWLEDGEMENT_STATE_UNSPECIFIED"
    }

    /// One product of the purchase (`productLineItem[]`).
    public struct LineItem: Sendable, Equatable {
        public var productID: String
        /// `productOfferDetails.quantity`; 1 when Google leaves it out (proto3 omits no non-zero
        /// value, so an absent quantity is a single unit: the contract says so).
        public var quantity: Int
        /// Units not refunded yet (quantity-based partial refunds and full refunds); nil: not said.
        public var refundableQuantity: Int?
        /// `productOfferDetails.consumptionState` as Google names it (its values are unconfirmed).
        public var consumptionState: String?

        public init(productID: String, quantity: Int, refundableQuantity: Int?, consumptionState: String?) {
            (self.productID, self.quantity, self.refundableQuantity, self.consumptionState) =
                (productID, quantity, refundableQuantity, consumptionState)
        }
    }

    /// `GPA.…`; nil when Google has no order for it (some test and promotional purchases).
    public var orderID: String?
    public var lineItems: [LineItem]
    public var state: State
    public var acknowledgement: Acknowledgement
    /// `purchaseCompletionTime`, Unix ms; present for every purchased purchase.
    public var completionTime: EpochMillis?
    /// `regionCode` (ISO 3166-1 alpha-2) and the three-letter storefront the reports use (nil for a
    /// code the table does not know).
    public var regionCode: String?
    public var storefront: String? { regionCode.flatMap(Storefronts.storefront(country:)) }
    /// What the app set at purchase: `obfuscatedExternalAccountId` ties the purchase to an order or a
    /// user (`--play-account-id`), at most 64 characters.
    public var obfuscatedAccountID: String?
    public var obfuscatedProfileID: String?
    /// `testPurchaseContext` present: a license tester's purchase (the sandbox).
    public var isTest: Bool

    /// Reads a 200 body of getproductpurchasev2.
    public static func read(_ body: [UInt8]) -> Result<PlayPurchase, PlayGarbage> {
        PlayObject.reading(body) { (o) throws(PlayGarbage) -> PlayPurchase in
            if let kind = try o.string("kind", limit: 64), kind != "androidpublisher#productPurchaseV2" {
                throw PlayGarbage("kind \"\(Sanitized.text(kind.utf8, limit: 40))\" is not androidpublisher#productPurchaseV2")
            }
            let items = try o.objects("productLineItem", limit: 1000)
            guard !items.isEmpty else { throw PlayGarbage("productLineItem is missing or empty") }
            var lineItems: [LineItem] = []
            for item in items {
                let product = try item.required("productId", limit: 150, allowed: PlayCharacters.isProductCharacter)
                let offer = try item.object("productOfferDetails")
                let quantity = try offer?.integer("quantity", in: 1...1_000_000) ?? 1
                let refundable = try offer?.integer("refundableQuantity", in: 0...1_000_000)
                if let refundable, refundable > quantity {
                    throw PlayGarbage(
                        "\(item.path).productOfferDetails.refundableQuantity \(refundable) is more than its quantity \(quantity)")
                }
                let consumption = try offer?.string(
                    "consumptionState", limit: 64, allowed: { PlayCharacters.isAlphanumeric($0) || $0 == 95 })
                lineItems.append(
                    LineItem(
                        productID: product, quantity: Int(quantity), refundableQuantity: refundable.map(Int.init),
                        consumptionState: consumption))
            }
            guard let context = try o.object("purchaseStateContext"),
                let stateName = try context.enumeration(
                    "purchaseState", ["PURCHASED", "PENDING", "CANCELLED", "PURCHASE_STATE_UNSPECIFIED"])
            else { throw PlayGarbage("purchaseStateContext.purchaseState is missing") }
            guard let state = State(rawValue: stateName) else { throw PlayGarbage("purchaseStateContext.purchaseState is unspecified") }
            let ackName = try o.enumeration(
                "acknowledgementState",
                Set([
                    "ACKNOWLEDGEMENT_STATE_PENDING", "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
                    "ACKNOWLEDGEMENT_STATE_UNSPECIFIED",
                ]))
            let completion = try o.time("purchaseCompletionTime")
            if state == .purchased && completion == nil { throw PlayGarbage("a PURCHASED purchase without purchaseCompletionTime") }
            let region = try o.string("regionCode", limit: 2, allowed: { $0 >= 65 && $0 <= 90 })
            if let region, region.utf8.count != 2 { throw PlayGarbage("regionCode is not two capital letters") }
            return PlayPurchase(
                orderID: try o.string("orderId", limit: 64, allowed: PlayCharacters.isOrderCharacter),
                lineItems: lineItems, state: state,
                acknowledgement: ackName.flatMap(Acknowledgement.init(rawValue:)) ?? .unspecified,
                completionTime: completion, regionCode: region,
                obfuscatedAccountID: try o.string("obfuscatedExternalAccountId", limit: 64),
                obfuscatedProfileID: try o.string("obfuscatedExternalProfileId", limit: 64),
                isTest: try o.object("testPurchaseContext") != nil)
        }
    }
}
