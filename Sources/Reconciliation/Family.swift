// The unit of decision: everything the job knows about one purchase family.
//
// A *family* is keyed by an original_transaction_id: every Apple transaction with that
// original, and every grant whose transaction belongs to it (or, when Apple never showed
// the grant's transaction, whose own original_transaction_id / transaction_id is the key).
// Every rule of contract §4 except the inferred order match looks inside one family only,
// so the data path streams families sorted by key and memory stays flat.

/// An order as far as a report needs it.
public struct OrderRef: Sendable, Equatable {
    public var orderID: String
    public var userID: String
    public var productID: String
    public var createdAt: EpochMillis

    public init(orderID: String, userID: String, productID: String, createdAt: EpochMillis) {
        self.orderID = orderID
        self.userID = userID
        self.productID = productID
        self.createdAt = createdAt
    }
}

/// An Apple transaction the job learned from a valid answer, with the context §4 needs.
public struct KnownTransaction: Sendable, Equatable {
    public var transaction: AppleTransaction
    /// From `iap_products`; nil when the product is unknown (then an input error was recorded).
    public var productType: ProductType?
    /// The earliest-submitted receipt that contains the transaction, and its uploader (§4).
    public var receiptID: String?
    public var userID: String?
    /// The `exact` order (§4): an order with this transaction_id, else an open order of the same
    /// product named by a receipt containing this transaction. Nil when there is none.
    public var exactOrder: OrderRef?
    /// How the job learned the transaction (the most direct way, contract §6 `source`).
    public var source: TransactionSource
    /// Apple's signed price and the list price of its product.
    public var price: PriceFacts
    /// Apple withdrew a family-shared purchase (`revocationType` FAMILY_REVOKE): no money returned.
    public var familyRevokedDate: EpochMillis?
    /// Apple's three-letter storefront code, when signed.
    public var storefront: String?
    /// What Apple said of its refund, as learned (`learned(_:)` applies it to `transaction`'s
    /// cancellation and `familyRevokedDate`).
    public var revocation = Revocation()

    public init(transaction: AppleTransaction, productType: ProductType?, receiptID: String?, userID: String?,
                exactOrder: OrderRef?, source: TransactionSource = .receipt, price: PriceFacts = PriceFacts(),
                familyRevokedDate: EpochMillis? = nil, storefront: String? = nil) {
        self.storefront = storefront
        self.transaction = transaction
        self.productType = productType
        self.receiptID = receiptID
        self.userID = userID
        self.exactOrder = exactOrder
        self.source = source
        self.price = price
        self.familyRevokedDate = familyRevokedDate
    }
}

/// How the job learned an Apple transaction (compensate.csv `source`), most direct first: a
/// transaction learned several ways keeps the first of these.
public enum TransactionSource: String, Sendable, CaseIterable {
    case receipt
    case signedTransaction = "signed_transaction"
    case transactionHistory = "transaction_history"
    case notification
}

/// What the receipts linked to a grant (same transaction_id or same order_id) say (§4 clawback).
public struct ReceiptLinks: Sendable, Equatable {
    /// Linked receipts in all.
    public var linked: Int
    /// Linked receipts definitively rejected as invalid (21003, 21010, 211xx final, 21002 ×3).
    public var rejectedInvalid: Int
    /// Linked receipts definitively rejected because they belong to another bundle.
    public var rejectedWrongBundle: Int
    /// Linked receipts with a valid answer (status 0 / 21006, right bundle) that do not
    /// contain the grant's transaction.
    public var verifiedWithoutTransaction: Int

    public init(linked: Int = 0, rejectedInvalid: Int = 0, rejectedWrongBundle: Int = 0,
                verifiedWithoutTransaction: Int = 0) {
        self.linked = linked
        self.rejectedInvalid = rejectedInvalid
        self.rejectedWrongBundle = rejectedWrongBundle
        self.verifiedWithoutTransaction = verifiedWithoutTransaction
    }
}

/// A grant with its product type and the verdict of its linked receipts.
public struct GrantFacts: Sendable, Equatable {
    public var grant: Grant
    public var productType: ProductType?
    public var links: ReceiptLinks
    /// The quantity of the order linked to the grant's transaction (`iap_orders.transaction_id`),
    /// when there is one: what was paid for when Apple never showed the transaction (§4).
    public var linkedOrderQuantity: Int?
    /// The list price of one unit of the grant's product (`iap_products.price`, `currency`).
    public var listUnitPrice: Money?

    public init(grant: Grant, productType: ProductType?, links: ReceiptLinks, linkedOrderQuantity: Int? = nil,
                listUnitPrice: Money? = nil) {
        self.grant = grant
        self.productType = productType
        self.links = links
        self.linkedOrderQuantity = linkedOrderQuantity
        self.listUnitPrice = listUnitPrice
    }
}

public struct Family: Sendable, Equatable {
    public var key: String
    /// Every Apple transaction of the family, in both environments (one per id and environment).
    public var transactions: [KnownTransaction]
    /// Every grant of the family, active and revoked.
    public var grants: [GrantFacts]

    public init(key: String, transactions: [KnownTransaction] = [], grants: [GrantFacts] = []) {
        self.key = key
        self.transactions = transactions
        self.grants = grants
    }
}

/// The night's parameters that the rules need.
public struct DecisionSettings: Sendable, Equatable {
    /// The run's "now" (`--as-of`).
    public var asOf: EpochMillis
    /// `--window-days`: transactions purchased in `[asOf − windowDays, asOf]` are checked for compensation.
    public var windowDays: Int
    /// `--refund-window-days`: refunds (and reversals) dated in `[asOf − refundWindowDays, asOf]`
    /// are listed in refunds.csv, and close as `out_of_window` when they leave it.
    public var refundWindowDays: Int

    public init(asOf: EpochMillis, windowDays: Int = 30, refundWindowDays: Int = 90) {
        self.asOf = asOf
        self.windowDays = windowDays
        self.refundWindowDays = refundWindowDays
    }

    /// The first instant of a window of `days` days ending at `asOf` (both ends included): the
    /// one formula of every window of the night (compensation, refunds, the notification sweep).
    public static func windowStart(asOf: EpochMillis, days: Int) -> EpochMillis {
        asOf - EpochMillis(days) * 86_400_000
    }

    /// `asOf − windowDays`: the first purchase time a compensation looks at.
    public var windowStart: EpochMillis { Self.windowStart(asOf: asOf, days: windowDays) }
    /// `asOf − refundWindowDays`: the first refund or reversal time refunds.csv lists.
    public var refundWindowStart: EpochMillis { Self.windowStart(asOf: asOf, days: refundWindowDays) }

    /// A purchase in `[asOf − windowDays, asOf]`.
    public func inWindow(_ t: EpochMillis) -> Bool { windowStart <= t && t <= asOf }
    /// A refund or reversal in `[asOf − refundWindowDays, asOf]`.
    public func inRefundWindow(_ t: EpochMillis) -> Bool { refundWindowStart <= t && t <= asOf }
}
