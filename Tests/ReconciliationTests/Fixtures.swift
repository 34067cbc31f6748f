// Small builders so each test case reads like a line of a finance worksheet.

import Testing

@testable import Reconciliation

let minute: EpochMillis = 60_000
let hour: EpochMillis = 3_600_000
let day: EpochMillis = 86_400_000

/// The run's "now" in every test: 2026-11-21T03:00:00Z, window 30 days.
let asOf: EpochMillis = UTC.millis(year: 2026, month: 11, day: 21, hour: 3)
let standardSettings = DecisionSettings(asOf: asOf, windowDays: 30)

/// An Apple transaction (production unless told), purchased `daysAgo` before `asOf`.
func apple(
    _ id: String, original: String? = nil, product: String = "gems", quantity: Int = 1,
    at purchaseDate: EpochMillis = asOf - 2 * day, cancelled: EpochMillis? = nil, cancellationReason: String? = nil,
    webOrder: String? = nil, env: AppStoreEnvironment = .production
) -> AppleTransaction {
    AppleTransaction(
        transactionID: id, originalTransactionID: original ?? id, productID: product, quantity: quantity,
        purchaseDate: purchaseDate, cancellationDate: cancelled, cancellationReason: cancellationReason,
        webOrderLineItemID: webOrder, environment: env)
}

/// A transaction as the data path hands it over: with its product type, receipt, user and exact order.
func known(
    _ transaction: AppleTransaction, _ type: ProductType? = .consumable, user: String? = "u1",
    receipt: String? = "r1", exactOrder: OrderRef? = nil
) -> KnownTransaction {
    KnownTransaction(transaction: transaction, productType: type, receiptID: receipt, userID: user,
                     exactOrder: exactOrder)
}

func grant(
    _ id: String, tx: String, original: String? = nil, user: String = "u1", product: String = "gems",
    quantity: Int = 1, at grantedAt: EpochMillis = asOf - day, revoked: EpochMillis? = nil, order: String? = nil
) -> Grant {
    Grant(grantID: id, userID: user, orderID: order, productID: product, transactionID: tx,
          originalTransactionID: original, quantity: quantity, grantedAt: grantedAt, revokedAt: revoked)
}

func facts(_ grant: Grant, _ type: ProductType? = .consumable, links: ReceiptLinks = ReceiptLinks(),
           linkedOrder: Int? = nil) -> GrantFacts {
    GrantFacts(grant: grant, productType: type, links: links, linkedOrderQuantity: linkedOrder)
}

func order(
    _ id: String, user: String = "u1", product: String = "gems", status: String = "created", tx: String? = nil,
    at createdAt: EpochMillis
) -> Order {
    Order(orderID: id, userID: user, productID: product, quantity: 1, status: status, transactionID: tx,
          createdAt: createdAt)
}

func candidate(
    _ transaction: AppleTransaction, user: String = "u1", exact: OrderRef? = nil, owed: Int = 1,
    type: ProductType = .consumable
) -> CompensationCandidate {
    CompensationCandidate(transaction: transaction, productType: type, userID: user, receiptID: "r-\(transaction.transactionID)",
                          owed: owed, reason: .paidNotGranted, exactOrder: exact)
}

func decide(_ transactions: [KnownTransaction] = [], _ grants: [GrantFacts] = [],
            settings: DecisionSettings = standardSettings) -> FamilyDecision {
    Decide.family(Family(key: "f", transactions: transactions, grants: grants), settings: settings)
}

/// A test case with a readable name in the test report.
protocol NamedCase: Sendable, CustomTestStringConvertible { var name: String { get } }
extension NamedCase { var testDescription: String { name } }
