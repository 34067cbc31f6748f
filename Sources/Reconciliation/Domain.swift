// The domain of the job, as contract.md §1 and domain.md name it. No I/O here.

/// Milliseconds since 1970-01-01T00:00:00Z. Apple's `*_date_ms` unit; kept as an integer so
/// that comparisons and reports are exact to the millisecond.
public typealias EpochMillis = Int64

public enum ProductType: String, Sendable, CaseIterable, Codable {
    case consumable
    case nonConsumable = "non_consumable"
    case autoRenewable = "auto_renewable"
    case nonRenewing = "non_renewing"
}

/// The App Store environment a transaction was verified in. Reports print the raw value.
public enum AppStoreEnvironment: String, Sendable, Codable, CaseIterable {
    case production
    case sandbox
}

/// One Apple transaction as the job keeps it (domain.md "Fields the job keeps").
public struct AppleTransaction: Sendable, Equatable, Codable {
    public var transactionID: String
    public var originalTransactionID: String
    public var productID: String
    public var quantity: Int
    public var purchaseDate: EpochMillis
    public var originalPurchaseDate: EpochMillis?
    public var expiresDate: EpochMillis?
    public var cancellationDate: EpochMillis?
    public var cancellationReason: String?
    public var isTrialPeriod: Bool?
    public var webOrderLineItemID: String?
    public var environment: AppStoreEnvironment
    public var bundleID: String?

    public init(
        transactionID: String, originalTransactionID: String, productID: String, quantity: Int,
        purchaseDate: EpochMillis, originalPurchaseDate: EpochMillis? = nil, expiresDate: EpochMillis? = nil,
        cancellationDate: EpochMillis? = nil, cancellationReason: String? = nil, isTrialPeriod: Bool? = nil,
        webOrderLineItemID: String? = nil, environment: AppStoreEnvironment, bundleID: String? = nil
    ) {
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.quantity = quantity
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
        self.isTrialPeriod = isTrialPeriod
        self.webOrderLineItemID = webOrderLineItemID
        self.environment = environment
        self.bundleID = bundleID
    }
}

/// `iap_orders` row.
public struct Order: Sendable, Equatable {
    public var orderID: String
    public var userID: String
    public var productID: String
    public var quantity: Int
    public var status: String
    public var transactionID: String?
    public var createdAt: EpochMillis

    public init(orderID: String, userID: String, productID: String, quantity: Int, status: String,
                transactionID: String?, createdAt: EpochMillis) {
        self.orderID = orderID
        self.userID = userID
        self.productID = productID
        self.quantity = quantity
        self.status = status
        self.transactionID = transactionID
        self.createdAt = createdAt
    }

    /// Contract §1: an open order has no transaction and is not delivered.
    public var isOpen: Bool { transactionID == nil && status != "delivered" }
}

/// `iap_grants` row: one delivery of goods.
public struct Grant: Sendable, Equatable {
    public var grantID: String
    public var userID: String
    public var orderID: String?
    public var productID: String
    public var transactionID: String
    public var originalTransactionID: String?
    public var quantity: Int
    public var grantedAt: EpochMillis
    public var revokedAt: EpochMillis?

    public init(grantID: String, userID: String, orderID: String?, productID: String, transactionID: String,
                originalTransactionID: String?, quantity: Int, grantedAt: EpochMillis, revokedAt: EpochMillis?) {
        self.grantID = grantID
        self.userID = userID
        self.orderID = orderID
        self.productID = productID
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.quantity = quantity
        self.grantedAt = grantedAt
        self.revokedAt = revokedAt
    }

    /// Contract §1: an active grant has not been revoked.
    public var isActive: Bool { revokedAt == nil }
}

/// Why a receipt is definitively rejected (contract §3 "reject", §4 clawback reasons).
public enum RejectionReason: String, Sendable, Codable {
    /// 21003, 21010, 21100–21199 not retryable, 21002 after three runs.
    case invalidReceipt = "invalid_receipt"
    /// A valid receipt of another app (`$IAP_BUNDLE_IDS`).
    case wrongBundle = "wrong_bundle"
}
