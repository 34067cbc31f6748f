// What Google Play knows of the purchases the simulator answers for: each one-time purchase (its
// productsv2 answer and its order's money), each voided record (refunds, chargebacks, revocations)
// and each real-time developer notification Google publishes (PlayTruthNotification.swift). Plain
// values; `PlayTruthFile.swift` writes and reads them as TSV so that `iap-sim` and the data
// generator share one form.

import PlayStore
import StrictJSON

/// The purchases, voided records and notifications Google Play's simulator answers from.
public struct PlayTruth: Sendable, Equatable {
    /// `purchaseStateContext.purchaseState` of a purchase.
    public enum State: String, Sendable, CaseIterable {
        case purchased = "PURCHASED", pending = "PENDING", cancelled = "CANCELLED"
    }

    /// Google's Money: a currency, whole `units` and `nanos` (billionths, of the sign of `units`).
    public struct Money: Sendable, Equatable {
        /// ISO 4217, three capital letters.
        public var currency: String
        /// Whole units of the currency.
        public var units: Int64
        /// -999,999,999…999,999,999.
        public var nanos: Int32

        /// An amount: `Money(currency: "USD", units: 12, nanos: 990_000_000)` is 12.99 USD.
        public init(currency: String, units: Int64, nanos: Int32 = 0) {
            (self.currency, self.units, self.nanos) = (currency, units, nanos)
        }

        /// What is wrong with it for Google's Money, or nil.
        var problem: String? {
            let letters = currency.utf8.count == 3 && currency.utf8.allSatisfy { $0 >= 65 && $0 <= 90 }
            guard letters else { return "currency \(shown(currency)) is not three capital letters" }
            guard (-999_999_999...999_999_999).contains(nanos) else { return "nanos \(nanos) is out of range" }
            guard units.magnitude <= 999_999_999_999_999_999 else { return "units \(units) has more than 18 digits" }
            guard !(units > 0 && nanos < 0), !(units < 0 && nanos > 0) else {
                return "units and nanos have opposite signs"
            }
            return nil
        }
    }

    /// One one-time purchase: what productsv2 and orders.batchget say of it.
    public struct Purchase: Sendable, Equatable {
        /// The app's package name (`com.example.game`).
        public var packageName: String
        /// The purchase token (letters, digits, `.`, `-`, `_`).
        public var purchaseToken: String
        /// `GPA.…`; nil: Google has no order for it (its productsv2 answer has no `orderId`).
        public var orderID: String?
        /// The product's id (`productLineItem[0].productId`).
        public var productID: String
        /// Units bought (`productOfferDetails.quantity`).
        public var quantity: Int
        /// `purchaseStateContext.purchaseState`.
        public var state: State
        /// `acknowledgementState`: ACKNOWLEDGED when true, PENDING otherwise.
        public var acknowledged: Bool
        /// `purchaseCompletionTime`, Unix ms; nil until the payment completes (required for PURCHASED).
        public var completionTimeMs: Int64?
        /// ISO 3166-1 alpha-2.
        public var regionCode: String?
        /// `obfuscatedExternalAccountId`, at most 64 printable characters.
        public var obfuscatedAccountID: String?
        /// A license tester's purchase (`testPurchaseContext{fopType:"TEST"}`).
        public var isTest: Bool
        /// Units not refunded yet.
        public var refundableQuantity: Int
        /// `productOfferDetails.consumptionState` (Google's values are unconfirmed; sent as written).
        public var consumptionState: String
        /// The order's `total`: what the buyer paid, tax included.
        public var total: Money
        /// The order's `tax`.
        public var tax: Money
        /// `developerRevenueInBuyerCurrency`.
        public var developerRevenue: Money
        /// The order's `state` (`PROCESSED`, `REFUNDED`…; Google's values are unconfirmed).
        public var orderState: String

        /// A purchase; `refundableQuantity` nil: nothing refunded (the whole quantity).
        public init(
            packageName: String, purchaseToken: String, orderID: String?, productID: String, quantity: Int = 1,
            state: State = .purchased, acknowledged: Bool = true, completionTimeMs: Int64?, regionCode: String? = nil,
            obfuscatedAccountID: String? = nil, isTest: Bool = false, refundableQuantity: Int? = nil,
            consumptionState: String = "CONSUMPTION_STATE_YET_TO_BE_CONSUMED", total: Money, tax: Money,
            developerRevenue: Money, orderState: String = "PROCESSED"
        ) {
            self.packageName = packageName
            self.purchaseToken = purchaseToken
            self.orderID = orderID
            self.productID = productID
            self.quantity = quantity
            self.state = state
            self.acknowledged = acknowledged
            self.completionTimeMs = completionTimeMs
            self.regionCode = regionCode
            self.obfuscatedAccountID = obfuscatedAccountID
            self.isTest = isTest
            self.refundableQuantity = refundableQuantity ?? quantity
            self.consumptionState = consumptionState
            self.total = total
            self.tax = tax
            self.developerRevenue = developerRevenue
            self.orderState = orderState
        }
    }

    /// One voided record: a whole purchase voided, or one quantity-based partial refund of it.
    public struct Voided: Sendable, Equatable {
        /// The app's package name.
        public var packageName: String
        /// The voided purchase's token.
        public var purchaseToken: String
        /// Its order, when it has one.
        public var orderID: String?
        /// `purchaseTimeMillis`, Unix ms.
        public var purchaseTimeMs: Int64
        /// `voidedTimeMillis`, Unix ms: the list's window and order.
        public var voidedTimeMs: Int64
        /// `voidedSource` 0 user, 1 developer, 2 Google.
        public var source: Int
        /// `voidedReason` 0…8 (0 other … 7 chargeback, 8 unacknowledged purchase).
        public var reason: Int
        /// Units refunded by this record; nil: the rest of the purchase. Listed only to a caller
        /// asking `includeQuantityBasedPartialRefund=true`.
        public var voidedQuantity: Int?

        /// A voided record (by default the user's, reason "other", the whole purchase).
        public init(
            packageName: String, purchaseToken: String, orderID: String?, purchaseTimeMs: Int64, voidedTimeMs: Int64,
            source: Int = 0, reason: Int = 0, voidedQuantity: Int? = nil
        ) {
            self.packageName = packageName
            self.purchaseToken = purchaseToken
            self.orderID = orderID
            self.purchaseTimeMs = purchaseTimeMs
            self.voidedTimeMs = voidedTimeMs
            self.source = source
            self.reason = reason
            self.voidedQuantity = voidedQuantity
        }
    }

    /// The one-time purchases, each token once.
    public var purchases: [Purchase]
    /// The voided records, in any order (the list sorts them).
    public var voided: [Voided]
    /// The notifications published on the app's topic, in any order (Pub/Sub delivers them oldest
    /// publish time first).
    public var notifications: [Notification]

    /// A truth; empty by default.
    public init(purchases: [Purchase] = [], voided: [Voided] = [], notifications: [Notification] = []) {
        (self.purchases, self.voided, self.notifications) = (purchases, voided, notifications)
    }

    /// Every package named in the truth, sorted.
    public var packages: [String] {
        let names = purchases.map(\.packageName) + voided.map(\.packageName) + notifications.map(\.packageName)
        return Array(Set(names)).sorted()
    }
}

extension PlayTruth.Purchase {
    /// What makes this purchase one Google would not answer (each value as PlayStore's parsers
    /// read it), or nil.
    public var problem: String? {
        guard PlayPaths.isPackageName(packageName) else { return "package \(shown(packageName)) is not a package name" }
        guard PlayPaths.isPurchaseToken(purchaseToken) else {
            return "the purchase token has a character it may not have"
        }
        if let orderID, !PlayPaths.isOrderID(orderID) { return "order id \(shown(orderID)) is not Google's form" }
        guard PlayTruth.isProductID(productID) else {
            return "product id \(shown(productID)) is not Google's form"
        }
        guard (1...1_000_000).contains(quantity) else { return "quantity \(quantity) is not 1-1000000" }
        guard (0...quantity).contains(refundableQuantity) else {
            return "refundable quantity \(refundableQuantity) is not 0-\(quantity)"
        }
        if state == .purchased, completionTimeMs == nil { return "a PURCHASED purchase needs a completion time" }
        if let completionTimeMs, !PlayTruth.isMillis(completionTimeMs) { return "completion time is not 2000-9999" }
        if let regionCode, regionCode.utf8.count != 2 || !regionCode.utf8.allSatisfy({ $0 >= 65 && $0 <= 90 }) {
            return "region \(shown(regionCode)) is not two capital letters"
        }
        if let obfuscatedAccountID, !PlayTruth.isOptionalText(obfuscatedAccountID, limit: 64) {
            return "account id is not 1-64 printable characters without space (nor `-`)"
        }
        for (name, value) in [("consumption state", consumptionState), ("order state", orderState)] {
            let ok = value.utf8.allSatisfy { PlayTruth.isAlphanumeric($0) || $0 == 95 }
            guard !value.isEmpty, value.utf8.count <= 64, ok else { return "\(name) is not letters, digits and `_`" }
        }
        for (name, money) in [("total", total), ("tax", tax), ("revenue", developerRevenue)] {
            if let problem = money.problem { return "\(name): \(problem)" }
        }
        return nil
    }
}

extension PlayTruth.Voided {
    /// What makes this record one Google would not list, or nil.
    public var problem: String? {
        guard PlayPaths.isPackageName(packageName) else { return "package \(shown(packageName)) is not a package name" }
        guard PlayPaths.isPurchaseToken(purchaseToken) else {
            return "the purchase token has a character it may not have"
        }
        if let orderID, !PlayPaths.isOrderID(orderID) { return "order id \(shown(orderID)) is not Google's form" }
        guard PlayTruth.isMillis(purchaseTimeMs), PlayTruth.isMillis(voidedTimeMs) else {
            return "purchase and voided times are not 2000-9999"
        }
        guard (0...2).contains(source) else { return "voided source \(source) is not 0-2" }
        guard (0...8).contains(reason) else { return "voided reason \(reason) is not 0-8" }
        if let voidedQuantity, !(1...1_000_000).contains(voidedQuantity) { return "voided quantity is not 1-1000000" }
        return nil
    }
}

extension PlayTruth {
    /// The first thing wrong with the truth (a bad value, a token named by two purchases, an
    /// order id named twice, a pending refund token announced for two orders), or nil.
    public var problem: String? {
        var tokens = Set<String>()
        var orders = Set<String>()
        for (n, p) in purchases.enumerated() {
            if let problem = p.problem { return "purchase \(n + 1): \(problem)" }
            guard tokens.insert(p.purchaseToken).inserted else { return "purchase \(n + 1): its token is named twice" }
            if let id = p.orderID, !orders.insert(id).inserted {
                return "purchase \(n + 1): order \(id) is named twice"
            }
        }
        for (n, v) in voided.enumerated() {
            if let problem = v.problem { return "voided \(n + 1): \(problem)" }
        }
        var refunds: [String: String] = [:]
        for (n, note) in notifications.enumerated() {
            if let problem = note.problem { return "notification \(n + 1): \(problem)" }
            if case .pendingRefundReview(let token, let order, _, _) = note.kind {
                guard refunds[token, default: order] == order else {
                    return "notification \(n + 1): its pending refund token is announced for two orders"
                }
                refunds[token] = order
            }
        }
        return nil
    }

    static func isAlphanumeric(_ c: UInt8) -> Bool {
        (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122)
    }

    /// From 2000 to the end of 9999, as PlayStore reads Google's times.
    static func isMillis(_ ms: Int64) -> Bool { (946_684_800_000...253_402_300_799_999).contains(ms) }

    /// 1…`limit` printable ASCII characters but space, and not `-` (the file's "absent").
    static func isOptionalText(_ text: String, limit: Int) -> Bool {
        !text.isEmpty && text != "-" && text.utf8.count <= limit && text.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
    }
}

/// Outside text for a problem line: quoted, at most 30 characters, made safe.
func shown(_ text: String) -> String { "\"" + Sanitized.text(text.utf8, limit: 30) + "\"" }
