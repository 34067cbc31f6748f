// What the job knows of one Google Play purchase token: the unit of Play's rules (docs/rules.md
// "Google Play"), as `Family` is Apple's. A one-time Play purchase has no renewals and no
// original: its order id (`GPA.…`), else its token, is the `transaction_id` the shop's rows name,
// and every rule looks at that one purchase and the grants naming it.

/// What Google said of a purchase token (`purchases.productsv2.getproductpurchasev2`), as stored.
public struct GooglePurchase: Sendable, Equatable {
    /// `purchaseStateContext.purchaseState`, or `unknown`: Google answered 404 and the job believed it.
    public enum Verdict: String, Sendable, CaseIterable {
        case purchased, pending, cancelled, unknown
    }

    /// One `productLineItem`.
    public struct Line: Sendable, Equatable {
        public var productID: String
        public var quantity: Int
        /// `productOfferDetails.consumptionState` as Google wrote it.
        public var consumptionState: String?

        public init(productID: String, quantity: Int, consumptionState: String? = nil) {
            self.productID = productID
            self.quantity = quantity
            self.consumptionState = consumptionState
        }

        /// Google says the app consumed it (a consumed purchase needs no acknowledgement).
        public var isConsumed: Bool { consumptionState == "CONSUMPTION_STATE_CONSUMED" }
        /// Units, at least 1 (as Apple's `quantity`).
        public var units: Int { max(1, quantity) }
    }

    public var token: String
    public var package: String
    public var verdict: Verdict
    /// Google's order id (`GPA.…`); nil for a purchase without an order (a test purchase).
    public var orderID: String?
    /// `acknowledgementState` is `ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED`.
    public var acknowledged: Bool
    /// `purchaseCompletionTime`; nil until the payment completes.
    public var completedAt: EpochMillis?
    /// `testPurchaseContext` was set: a tester's purchase, the sandbox of Play.
    public var test: Bool
    public var lines: [Line]

    public init(
        token: String, package: String, verdict: Verdict, orderID: String? = nil, acknowledged: Bool = false,
        completedAt: EpochMillis? = nil, test: Bool = false, lines: [Line] = []
    ) {
        self.token = token
        self.package = package
        self.verdict = verdict
        self.orderID = orderID
        self.acknowledged = acknowledged
        self.completedAt = completedAt
        self.test = test
        self.lines = lines
    }

    /// The `transaction_id` the shop's rows give the purchase: Google's order id, else the token
    /// (contract "Two stores in one shop").
    public var transactionID: String { orderID ?? token }
    /// Every unit of every line.
    public var units: Int { lines.reduce(0) { $0 + $1.units } }
}

/// One record of Google's voided purchases (`purchases.voidedpurchases.list`) for the token.
public struct PlayVoid: Sendable, Equatable {
    /// `voidedTimeMillis`.
    public var voidedAt: EpochMillis
    /// `voidedQuantity`: units refunded by this record; nil when it names none (the rest of the purchase).
    public var quantity: Int?
    /// `voidedSource`: 0 user, 1 developer, 2 Google.
    public var source: Int
    /// `voidedReason`: 0 other … 7 chargeback, 8 unacknowledged purchase.
    public var reason: Int

    public init(voidedAt: EpochMillis, quantity: Int? = nil, source: Int = 0, reason: Int = 0) {
        self.voidedAt = voidedAt
        self.quantity = quantity
        self.source = source
        self.reason = reason
    }

    public static let chargeback = 7
    public static let unacknowledged = 8
}

/// What `orders.batchget` said of the purchase's order: its `state` and what the buyer paid.
public struct PlayOrderFacts: Sendable, Equatable {
    /// Google's `state` (`PROCESSED`, `REFUNDED`…), as written; nil when Google gave none.
    public var state: String?
    /// `total`: what the buyer paid for the whole order (every line, tax included).
    public var total: Money?
    /// When the job asked `orders.batchget` (its answer says nothing of a refund after it).
    public var askedAt: EpochMillis?

    public init(state: String? = nil, total: Money? = nil, askedAt: EpochMillis? = nil) {
        self.state = state
        self.total = total
        self.askedAt = askedAt
    }

    /// The states in which an order's money went back, in part or whole, is going back, or never came.
    public static let refundedStates: Set<String> = [
        "REFUNDED", "PARTIALLY_REFUNDED", "PENDING_REFUND", "CANCELED", "CANCELLED", "PENDING",
    ]

    /// Google's order, asked after the voided record's time, says it was paid and kept: the voided
    /// record is contradicted. An order asked before the refund says nothing of it.
    public func contradicts(_ void: PlayVoid) -> Bool {
        guard let state, let askedAt, askedAt > void.voidedAt else { return false }
        return !Self.refundedStates.contains(state)
    }

    /// Google's money as it sends it (`units`, `nanos`), in milliunits: exact for every amount of at
    /// most three decimals; finer nanos are rounded once, half away from zero, to the milliunit.
    public static func milliunits(units: Int64, nanos: Int32) -> Int64? {
        // Google: units and nanos have the same sign; nanos within ±999,999,999.
        guard abs(Int64(nanos)) < 1_000_000_000, units == 0 || nanos == 0 || (units < 0) == (nanos < 0) else { return nil }
        let (whole, overflow) = units.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return nil }
        let (sum, over) = whole.addingReportingOverflow(Money.scaled(Int64(nanos), 1, 1_000_000))
        return over ? nil : sum
    }
}

/// Everything the rules need of one Play purchase token.
public struct PlayFacts: Sendable, Equatable {
    /// What Google last said of the token.
    public var purchase: GooglePurchase
    /// Its voided records, in any order.
    public var voids: [PlayVoid]
    /// Its order, when `orders.batchget` answered.
    public var order: PlayOrderFacts?
    /// Whose purchase (`PlayOwner.of`); nil: nobody's known, never compensated.
    public var userID: String?
    /// The earliest upload of the token (`iap_receipts.receipt_id`).
    public var receiptID: String?
    /// Our order for it (`iap_orders.transaction_id`, or the order its account id names).
    public var exactOrder: OrderRef?
    /// Play's products (`iap_products` rows of Google Play), by product id.
    public var products: [String: PlayProduct]
    /// Every grant (active or revoked, any user) whose `transaction_id` is the purchase's.
    public var grants: [Grant]

    public init(
        purchase: GooglePurchase, voids: [PlayVoid] = [], order: PlayOrderFacts? = nil, userID: String? = nil,
        receiptID: String? = nil, exactOrder: OrderRef? = nil,
        products: [String: PlayProduct] = [:], grants: [Grant] = []
    ) {
        self.purchase = purchase
        self.voids = voids
        self.order = order
        self.userID = userID
        self.receiptID = receiptID
        self.exactOrder = exactOrder
        self.products = products
        self.grants = grants
    }

}

/// A Play product as the rules need it: its type and list price of one unit.
public struct PlayProduct: Sendable, Equatable {
    public var type: ProductType
    public var listUnit: Money?

    public init(_ type: ProductType, listUnit: Money? = nil) {
        self.type = type
        self.listUnit = listUnit
    }
}

/// Whose Play purchase (docs/rules.md "Google Play"), the first of: the uploader of its token's
/// earliest receipt; the user of the order whose `order_id` is its `obfuscatedExternalAccountId`, or
/// the user that account id is, as the app sets it; the user of its earliest grant.
public enum PlayOwner {
    public static func of(uploader: String?, accountUser: String?, earliestGrantUser: String?) -> String? {
        uploader ?? accountUser ?? earliestGrantUser
    }
}
