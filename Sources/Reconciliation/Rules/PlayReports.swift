// The rows Play's rules make that the App Store's do not: acknowledge.csv, and refunds.csv's rows
// for Google's voided purchases (docs/rules.md "Google Play").

/// What to do about a purchase nobody acknowledged (acknowledge.csv `action`).
public enum AcknowledgeAction: String, Sendable, CaseIterable {
    /// Not granted: a missed order that Google will also refund. Grant it, then acknowledge.
    case grantAndAcknowledge = "grant_and_acknowledge"
    /// Granted: only the acknowledgement is missing.
    case acknowledge
    /// Past `acknowledge_by`: Google may already have refunded and revoked it.
    case overdue
}

/// One row of `acknowledge.csv`: a production purchase Google calls PURCHASED that is neither
/// acknowledged nor consumed, most urgent first.
public struct AcknowledgeRow: Sendable, Equatable {
    /// `purchaseCompletionTime` + 3 days.
    public var acknowledgeBy: EpochMillis
    public var action: AcknowledgeAction
    public var package: String
    public var transactionID: String
    public var token: String
    /// The purchase's products, in Google's order, separated by one space.
    public var productIDs: String
    /// Units still paid for (every unit less those voided).
    public var quantity: Int
    public var userID: String?
    public var orderID: String?
    public var completedAt: EpochMillis

    /// acknowledge.csv's columns, described once.
    public static let layout: [RowColumn<AcknowledgeRow>] = [
        .init("acknowledge_by", .dateTime) { UTC.timestamp($0.acknowledgeBy) }, .init("action") { $0.action.rawValue },
        .init("package") { $0.package }, .init("transaction_id") { $0.transactionID }, .init("purchase_token") { $0.token },
        .init("product_id") { $0.productIDs }, .init("quantity", .integer) { String($0.quantity) },
        .init("user_id") { $0.userID ?? "" }, .init("order_id") { $0.orderID ?? "" },
        .init("completed_at", .dateTime) { UTC.timestamp($0.completedAt) },
    ]

    public var cells: [String] { RowColumn.cells(self, Self.layout) }

    /// Most urgent first: `acknowledge_by`, then `transaction_id`.
    public static func urgentFirst(_ a: AcknowledgeRow, _ b: AcknowledgeRow) -> Bool {
        (a.acknowledgeBy, a.transactionID) < (b.acknowledgeBy, b.transactionID)
    }
}

enum PlayAcknowledge {
    /// A purchase Google calls PURCHASED, not a tester's, neither acknowledged nor consumed, with
    /// units still paid for, completed in the last four days (the night asks Google again only
    /// about those: an older answer is stale).
    static func rows(_ facts: PlayFacts, grants: [Grant], voided: PlayVoided, settings: DecisionSettings) -> [AcknowledgeRow] {
        let purchase = facts.purchase
        guard purchase.verdict == .purchased, !purchase.test, !purchase.acknowledged,
            !purchase.lines.contains(where: \.isConsumed), let completed = purchase.completedAt,
            completed <= settings.asOf, settings.asOf - completed <= PlayRules.acknowledgeListedFor
        else { return [] }
        let paid = purchase.units - voided.total
        guard paid > 0 else { return [] }
        let by = completed + PlayRules.acknowledgeWithin
        let action: AcknowledgeAction =
            settings.asOf > by
            ? .overdue : Compensate.activeUnits(grants) >= paid ? .acknowledge : .grantAndAcknowledge
        return [
            AcknowledgeRow(
                acknowledgeBy: by, action: action, package: purchase.package, transactionID: purchase.transactionID,
                token: purchase.token, productIDs: purchase.lines.map(\.productID).joined(separator: " "), quantity: paid,
                userID: facts.userID, orderID: facts.exactOrder?.orderID, completedAt: completed)
        ]
    }
}

/// A Play refund's `state` in refunds.csv, the first that fits.
public enum PlayRefundState: String, Sendable, CaseIterable {
    /// Google's order (`orders.batchget`) says it was paid and kept: the voided list and the order disagree.
    case contradicted
    /// `voidedReason` 8: Google refunded a purchase the shop never acknowledged: a sale lost.
    case salesLost = "sales_lost"
    case neverGranted = "never_granted"
    /// Active grants hold more units than are still paid for (clawback.csv).
    case stillGranted = "still_granted"
    case clawedBack = "clawed_back"
}

/// One refunds.csv row for a Play purchase's line with voided units: Google's voided record in the
/// columns Apple's refund fills (its `voidedReason` and `voidedSource` as Google's codes).
public struct PlayRefundRow: Sendable, Equatable {
    public var transactionID: String
    public var userID: String?
    public var productID: String
    public var productType: ProductType?
    public var voidedAt: EpochMillis
    public var reason: Int
    public var source: Int
    /// Voided units × 100,000 / the line's units; nil when the whole line was voided.
    public var percentageMilli: Int?
    public var amount: Money?
    public var refunded: Money?
    public var state: PlayRefundState
    public var grantIDs: [String]

    /// refunds.csv's columns as far as a row gives them (the history fills `first_seen`, the
    /// report writer the proceeds).
    public static let layout: [RowColumn<PlayRefundRow>] = [
        .init("transaction_id") { $0.transactionID }, .init("original_transaction_id") { $0.transactionID },
        .init("user_id") { $0.userID ?? "" }, .init("product_id") { $0.productID },
        .init("product_type") { $0.productType?.rawValue ?? "" },
        .init("revocation_date", .dateTime) { UTC.timestamp($0.voidedAt) }, .init("revocation_reason") { String($0.reason) },
        .init("revocation_type") { String($0.source) },
        .init("revocation_percentage", .percentMilli) { $0.percentageMilli.map { String($0) } ?? "" },
        .init("amount", .money) { $0.amount?.text ?? "" }, .init("refunded_amount", .money) { $0.refunded?.text ?? "" },
        .init("currency") { ($0.amount ?? $0.refunded)?.currency ?? "" }, .init("state") { $0.state.rawValue },
        .init("grant_ids") { $0.grantIDs.sorted().joined(separator: " ") },
    ]

    public var cells: [String] { RowColumn.cells(self, Self.layout) }
    public var findingKey: String { "refund|" + transactionID + "|" + productID }
}

enum PlayRefunds {
    /// A line of a production purchase with voided units, whose latest record is in the refund window.
    static func rows(_ facts: PlayFacts, grants: [Grant], voided: PlayVoided, settings: DecisionSettings) -> [PlayRefundRow] {
        let purchase = facts.purchase
        guard let latest = voided.latest, !purchase.test, purchase.verdict != .unknown,
            settings.inRefundWindow(latest.voidedAt)
        else { return [] }
        let paid = purchase.units - voided.total
        let active = Compensate.activeUnits(grants)
        let state: PlayRefundState =
            facts.order?.contradicts(latest) == true
            ? .contradicted
            : latest.reason == PlayVoid.unacknowledged
                ? .salesLost
                : grants.isEmpty
                    ? .neverGranted
                    : active > paid ? .stillGranted : .clawedBack
        return purchase.lines.enumerated().compactMap { i, line in
            let units = voided.perLine[i]
            guard units > 0 else { return nil }
            let price = PlayRules.price(facts, productID: line.productID)
            return PlayRefundRow(
                transactionID: purchase.transactionID,
                userID: facts.userID ?? grants.first?.userID, productID: line.productID,
                productType: facts.products[line.productID]?.type, voidedAt: latest.voidedAt, reason: latest.reason,
                source: latest.source,
                percentageMilli: units < line.units ? Int(Money.scaled(Int64(units), 100_000, Int64(line.units))) : nil,
                amount: price.amount(units: line.units, transactionQuantity: line.units),
                refunded: price.amount(units: units, transactionQuantity: line.units),
                state: state, grantIDs: grants.filter { purchase.lines.count == 1 || $0.productID == line.productID }.map(\.grantID))
        }
    }
}
