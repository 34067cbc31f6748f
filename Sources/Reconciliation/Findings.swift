// The findings of contract §4 and the report rows of §6 they become.
//
// Each row carries its cells in the column order of `ReportFile.columns`, without
// `first_seen` (the findings history adds it) and Apple's proceeds (the sales reports held when
// the CSV is written: `ReportLayout.filledAtWrite`), and a `findingKey`: the stable
// identity under which the history remembers the day a finding first appeared.

/// Why a transaction is owed goods (contract §4 compensate).
public enum CompensationReason: String, Sendable, CaseIterable {
    case paidNotGranted = "paid_not_granted"
    case partiallyGranted = "partially_granted"
    case revokedNotRefunded = "revoked_not_refunded"
}

/// How a compensation row found its order (contract §4 "Order match").
public enum OrderMatch: String, Sendable, CaseIterable {
    case exact
    case inferred
    case none
}

/// Why an active grant should not exist (contract §4 duplicate_grants), in precedence order.
public enum DuplicateKind: String, Sendable, CaseIterable {
    case sameTransaction = "same_transaction"
    case restoreAsPurchase = "restore_as_purchase"
    case crossAccount = "cross_account"
}

/// Why an active grant's payment is gone or never existed (contract §4 clawback), in precedence order.
public enum ClawbackReason: String, Sendable, CaseIterable {
    case refunded
    case familyRevoked = "family_revoked"
    case invalidReceipt = "invalid_receipt"
    case wrongBundle = "wrong_bundle"
    case transactionNotFound = "transaction_not_found"
    case sandboxTransaction = "sandbox_transaction"
    /// Google Play: a refund whose `voidedReason` is 7, a chargeback.
    case chargeback
    /// Google Play: `voidedReason` 8, refunded because nobody acknowledged it within three days:
    /// goods given, money gone.
    case unacknowledged
    /// Google Play: Google calls the purchase CANCELLED and voided none of it: never paid.
    case cancelled
}

/// A compensation finding before the inferred order match (which needs orders of other families).
/// `exactOrder` is set when the match is `exact`.
public struct CompensationCandidate: Sendable, Equatable {
    public var transaction: AppleTransaction
    public var productType: ProductType
    /// The transaction's user (docs/rules.md "Whose purchase"): the uploader of its
    /// earliest-submitted receipt, else the user its appAccountToken, transaction history or
    /// family names.
    public var userID: String
    /// The earliest-submitted receipt that contains it; nil when no upload showed it (learned
    /// from the App Store Server API alone).
    public var receiptID: String?
    /// Units still owed: the transaction's quantity less the units of its active grants.
    public var owed: Int
    public var reason: CompensationReason
    public var exactOrder: OrderRef?
    /// The money of the units owed; nil when no price is known.
    public var amount: Money?
    public var source: TransactionSource

    public init(transaction: AppleTransaction, productType: ProductType, userID: String, receiptID: String?,
                owed: Int, reason: CompensationReason, exactOrder: OrderRef?, amount: Money? = nil,
                source: TransactionSource = .receipt) {
        self.transaction = transaction
        self.productType = productType
        self.userID = userID
        self.receiptID = receiptID
        self.owed = owed
        self.reason = reason
        self.exactOrder = exactOrder
        self.amount = amount
        self.source = source
    }
}

/// One row of `compensate.csv`.
public struct CompensationRow: Sendable, Equatable {
    /// Empty in the report when `match` is `none`.
    public var orderID: String?
    public var userID: String
    public var productID: String
    public var productType: ProductType
    /// Units still owed (the report's `quantity`).
    public var quantity: Int
    public var transactionID: String
    public var originalTransactionID: String
    public var purchaseDate: EpochMillis
    public var environment: AppStoreEnvironment
    public var match: OrderMatch
    public var reason: CompensationReason
    public var receiptID: String?
    public var amount: Money?
    public var source: TransactionSource

    public init(orderID: String?, userID: String, productID: String, productType: ProductType, quantity: Int,
                transactionID: String, originalTransactionID: String, purchaseDate: EpochMillis,
                environment: AppStoreEnvironment, match: OrderMatch, reason: CompensationReason, receiptID: String?,
                amount: Money? = nil, source: TransactionSource = .receipt) {
        self.amount = amount
        self.source = source
        self.orderID = orderID
        self.userID = userID
        self.productID = productID
        self.productType = productType
        self.quantity = quantity
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.purchaseDate = purchaseDate
        self.environment = environment
        self.match = match
        self.reason = reason
        self.receiptID = receiptID
    }

    /// compensate.csv's columns, described once (ReportFile.layout).
    public static let layout: [RowColumn<CompensationRow>] = [
        .init("order_id") { $0.orderID ?? "" }, .init("user_id") { $0.userID }, .init("product_id") { $0.productID },
        .init("product_type") { $0.productType.rawValue }, .init("quantity", .integer) { String($0.quantity) },
        .init("transaction_id") { $0.transactionID }, .init("original_transaction_id") { $0.originalTransactionID },
        .init("purchase_date", .dateTime) { UTC.timestamp($0.purchaseDate) }, .init("environment") { $0.environment.rawValue },
        .init("match") { $0.match.rawValue }, .init("reason") { $0.reason.rawValue }, .init("receipt_id") { $0.receiptID ?? "" },
        .init("first_seen", .date, nil),
        .init("amount", .money, money: .summed([MoneyTotal("owed")])) { $0.amount?.text ?? "" },
        .init("currency", money: .currency) { $0.amount?.currency ?? "" }, .init("source") { $0.source.rawValue },
        .init("proceeds", .money, money: .summed([MoneyTotal("proceeds_owed")], in: "proceeds_currency"), nil),
        .init("proceeds_currency", money: .currency, nil),
    ]

    /// The cells in `ReportFile.compensate.columns` order, without `first_seen` and the proceeds.
    public var cells: [String] { RowColumn.cells(self, Self.layout) }

    /// One Apple transaction is owed at most once, whatever its order match.
    public var findingKey: String { "compensate|\(transactionID)|\(environment.rawValue)" }
}

/// One row of `duplicate_grants.csv`.
public struct DuplicateGrantRow: Sendable, Equatable {
    public var grantID: String
    public var userID: String
    public var orderID: String?
    public var productID: String
    public var productType: ProductType
    public var transactionID: String
    public var originalTransactionID: String?
    public var kind: DuplicateKind
    /// The legitimate grant this one duplicates.
    public var keptGrantID: String
    public var grantedAt: EpochMillis

    public init(grantID: String, userID: String, orderID: String?, productID: String, productType: ProductType,
                transactionID: String, originalTransactionID: String?, kind: DuplicateKind, keptGrantID: String,
                grantedAt: EpochMillis) {
        self.grantID = grantID
        self.userID = userID
        self.orderID = orderID
        self.productID = productID
        self.productType = productType
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.kind = kind
        self.keptGrantID = keptGrantID
        self.grantedAt = grantedAt
    }

    /// duplicate_grants.csv's columns, described once (ReportFile.layout).
    public static let layout: [RowColumn<DuplicateGrantRow>] = [
        .init("grant_id") { $0.grantID }, .init("user_id") { $0.userID }, .init("order_id") { $0.orderID ?? "" },
        .init("product_id") { $0.productID }, .init("product_type") { $0.productType.rawValue },
        .init("transaction_id") { $0.transactionID }, .init("original_transaction_id") { $0.originalTransactionID ?? "" },
        .init("kind") { $0.kind.rawValue }, .init("kept_grant_id") { $0.keptGrantID },
        .init("granted_at", .dateTime) { UTC.timestamp($0.grantedAt) }, .init("first_seen", .date, nil),
    ]

    /// The cells in `ReportFile.duplicateGrants.columns` order, without `first_seen`.
    public var cells: [String] { RowColumn.cells(self, Self.layout) }

    public var findingKey: String { "duplicate|\(grantID)" }
}

/// One row of `clawback.csv`.
public struct ClawbackRow: Sendable, Equatable {
    public var grantID: String
    public var userID: String
    public var orderID: String?
    public var productID: String
    public var productType: ProductType
    /// The grant's quantity.
    public var quantity: Int
    public var transactionID: String
    public var originalTransactionID: String?
    public var grantedAt: EpochMillis
    public var reason: ClawbackReason
    public var cancellationDate: EpochMillis?
    public var cancellationReason: String?
    /// The money of the grant's units; nil when no price is known.
    public var amount: Money?

    public init(grantID: String, userID: String, orderID: String?, productID: String, productType: ProductType,
                quantity: Int, transactionID: String, originalTransactionID: String?, grantedAt: EpochMillis,
                reason: ClawbackReason, cancellationDate: EpochMillis?, cancellationReason: String?,
                amount: Money? = nil) {
        self.amount = amount
        self.grantID = grantID
        self.userID = userID
        self.orderID = orderID
        self.productID = productID
        self.productType = productType
        self.quantity = quantity
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.grantedAt = grantedAt
        self.reason = reason
        self.cancellationDate = cancellationDate
        self.cancellationReason = cancellationReason
    }

    /// clawback.csv's columns, described once (ReportFile.layout).
    public static let layout: [RowColumn<ClawbackRow>] = [
        .init("grant_id") { $0.grantID }, .init("user_id") { $0.userID }, .init("order_id") { $0.orderID ?? "" },
        .init("product_id") { $0.productID }, .init("product_type") { $0.productType.rawValue },
        .init("quantity", .integer) { String($0.quantity) }, .init("transaction_id") { $0.transactionID },
        .init("original_transaction_id") { $0.originalTransactionID ?? "" },
        .init("granted_at", .dateTime) { UTC.timestamp($0.grantedAt) }, .init("reason") { $0.reason.rawValue },
        .init("cancellation_date", .dateTime) { $0.cancellationDate.map(UTC.timestamp) ?? "" },
        .init("cancellation_reason") { $0.cancellationReason ?? "" }, .init("first_seen", .date, nil),
        .init("amount", .money, money: .summed([MoneyTotal("claw_back")])) { $0.amount?.text ?? "" },
        .init("currency", money: .currency) { $0.amount?.currency ?? "" },
        .init("proceeds", .money, money: .summed([MoneyTotal("proceeds_claw_back")], in: "proceeds_currency"), nil),
        .init("proceeds_currency", money: .currency, nil),
    ]

    /// The cells in `ReportFile.clawback.columns` order, without `first_seen` and the proceeds.
    public var cells: [String] { RowColumn.cells(self, Self.layout) }

    public var findingKey: String { "clawback|\(grantID)" }
}

/// Everything §4 decides inside one family. Compensations still lack their inferred order
/// match (`Decide.matchOrders`), which needs the open orders of every family at once.
public struct FamilyDecision: Sendable, Equatable {
    public var compensations: [CompensationCandidate]
    public var duplicates: [DuplicateGrantRow]
    public var clawbacks: [ClawbackRow]
    public var unattributed: [UnattributedRow]

    public init(compensations: [CompensationCandidate] = [], duplicates: [DuplicateGrantRow] = [],
                clawbacks: [ClawbackRow] = [], unattributed: [UnattributedRow] = []) {
        self.compensations = compensations
        self.duplicates = duplicates
        self.clawbacks = clawbacks
        self.unattributed = unattributed
    }
}

/// One row of `unattributed.csv`: a purchase Apple reported that no order, upload or grant ties
/// to a user. Never compensated blindly: customer service finds it when the customer writes.
public struct UnattributedRow: Sendable, Equatable {
    public var transactionID: String
    public var productID: String
    public var purchaseDate: EpochMillis
    public var amount: Money?
    public var storefront: String?

    public init(transactionID: String, productID: String, purchaseDate: EpochMillis, amount: Money?, storefront: String?) {
        self.transactionID = transactionID
        self.productID = productID
        self.purchaseDate = purchaseDate
        self.amount = amount
        self.storefront = storefront
    }

    /// unattributed.csv's columns, described once (ReportFile.layout). Its amounts are listed,
    /// not summed.
    public static let layout: [RowColumn<UnattributedRow>] = [
        .init("transaction_id") { $0.transactionID }, .init("product_id") { $0.productID },
        .init("purchase_date", .dateTime) { UTC.timestamp($0.purchaseDate) }, .init("amount", .money) { $0.amount?.text ?? "" },
        .init("currency") { $0.amount?.currency ?? "" }, .init("storefront") { $0.storefront ?? "" },
        .init("first_seen", .date, nil),
    ]

    /// The cells in `ReportFile.unattributed.columns` order, without `first_seen`.
    public var cells: [String] { RowColumn.cells(self, Self.layout) }

    public var findingKey: String { "unattributed|\(transactionID)" }
}
