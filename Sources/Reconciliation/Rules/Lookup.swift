// `iap-reconcile lookup`: what customer service should do about one purchase, from what Apple
// signed and what our data shows (seed 001: a customer sends the order ID of Apple's invoice,
// staff confirm the missed order and compensate). No I/O: the command gathers the facts.

/// One transaction's verdict: a kind for tools, and one sentence for people.
public struct LookupVerdict: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// Paid and granted: nothing to do.
        case granted
        /// Paid, never (fully) granted, and we know to whom: compensate (a compensate.csv row).
        case compensate
        /// Refunded, revoked or never paid, goods still granted: claw back (clawback.csv rows).
        case clawBack = "claw_back"
        /// Refunded (or family revoked) and nothing is granted any more: nothing to do.
        case refunded
        /// Apple knows it, nothing of ours ties it to a user: ask the customer who they are.
        case unknownToUs = "unknown_to_us"
        /// A sandbox (or Xcode) purchase, not granted: no money was paid.
        case sandbox
        /// Not granted, but a restore of a purchase the user already holds: nothing owed.
        case restore
        /// Not granted, purchased before the night's window (`--window-days`): the night does not
        /// compensate it; a person decides.
        case outsideWindow = "outside_window"
        /// Its product is not a valid row of `iap_products` (an input error): no rule judges it.
        case unknownProduct = "unknown_product"
        /// Google Play: pending, cancelled, or a token Google does not know, and nothing granted:
        /// no money was paid, nothing to do.
        case notPaid = "not_paid"
    }

    public var kind: Kind
    public var text: String
    /// The user the verdict concerns (compensate, claw back, granted), when known.
    public var userID: String?
    public var orderID: String?
    /// Compensate: the transaction's active grants; claw back: the grants to take back; granted:
    /// the active grants.
    public var grantIDs: [String]
    /// Units still owed (compensate).
    public var owed: Int?
    /// The report the night lists the purchase in (`compensate.csv`, `clawback.csv`,
    /// `unattributed.csv`), and the finding keys it lists it under.
    public var report: ReportFile?
    public var findingKeys: [String]

    public init(kind: Kind, text: String, userID: String? = nil, orderID: String? = nil, grantIDs: [String] = [],
                owed: Int? = nil, report: ReportFile? = nil, findingKeys: [String] = []) {
        self.kind = kind
        self.text = text
        self.userID = userID
        self.orderID = orderID
        self.grantIDs = grantIDs
        self.owed = owed
        self.report = report
        self.findingKeys = findingKeys
    }
}

public enum Lookup {
    /// The verdict on the Apple transaction `transactionID` (in `environment`) of `family`, read
    /// from the night's decision on that family (`Decide.family`): lookup and the night decide
    /// through the same rules. `inferredOrder` is the order the inferred match gives a
    /// compensation without an exact order (it crosses families, so the caller runs it:
    /// `Decide.inferOrders`); nil for `none`. Nil when the family has no such transaction.
    public static func verdict(transactionID: String, environment: AppStoreEnvironment, in family: Family,
                               decision: FamilyDecision, inferredOrder: OrderRef? = nil,
                               settings: DecisionSettings) -> LookupVerdict? {
        guard let known = family.transactions.first(where: {
            $0.transaction.transactionID == transactionID && $0.transaction.environment == environment
        }) else { return nil }
        let t = known.transaction
        let grants = family.grants.map(\.grant).filter { $0.transactionID == transactionID }.sorted(by: grantedEarlier)
        let active = grants.filter(\.isActive)
        let paid = "paid \(UTC.minute(t.purchaseDate)) UTC"
        let revokedAt = t.cancellationDate ?? known.familyRevokedDate
        let what = known.familyRevokedDate != nil && t.cancellationDate == nil ? "family sharing revoked" : "refunded"

        let clawbacks = decision.clawbacks.filter { $0.transactionID == transactionID }
        if !clawbacks.isEmpty {
            let why: String
            switch clawbacks[0].reason {
            case .refunded, .familyRevoked, .chargeback, .unacknowledged:
                why = "\(what) on \(revokedAt.map { UTC.minute($0) } ?? "?") UTC"
            case .cancelled: why = "cancelled (no money was paid)"
            case .sandboxTransaction: why = "a sandbox purchase (no money was paid)"
            case .invalidReceipt, .wrongBundle, .transactionNotFound: why = "its payment is not proven (\(clawbacks[0].reason.rawValue))"
            }
            let list = clawbacks.map(\.grantID).joined(separator: ", ")
            let first = clawbacks[0]
            return LookupVerdict(kind: .clawBack,
                                 text: "\(paid), \(why), goods still granted (grant \(list)) to user \(first.userID): claw back",
                                 userID: first.userID, orderID: first.orderID, grantIDs: clawbacks.map(\.grantID),
                                 report: .clawback, findingKeys: clawbacks.map(\.findingKey))
        }
        if t.environment == .sandbox {
            return LookupVerdict(kind: .sandbox,
                                 text: "sandbox purchase \(UTC.minute(t.purchaseDate)) UTC: no money was paid, nothing to compensate",
                                 userID: active.first?.userID, grantIDs: active.map(\.grantID))
        }
        if let revokedAt {
            return LookupVerdict(kind: .refunded,
                                 text: "\(paid), \(what) on \(UTC.minute(revokedAt)) UTC; nothing is granted any more: nothing to do",
                                 userID: grants.first?.userID ?? known.userID)
        }
        let duplicates = decision.duplicates.filter { $0.transactionID == transactionID }
        if let c = decision.compensations.first(where: {
            $0.transaction.transactionID == transactionID && $0.transaction.environment == environment
        }) {
            let order = c.exactOrder ?? inferredOrder
            let why = Self.why(c, granted: units(of: t) - c.owed)
            let match = c.exactOrder != nil ? "" : inferredOrder != nil ? " (inferred)" : ""
            let row = Decide.matchOrders([c], openOrders: [])[0]
            return LookupVerdict(kind: .compensate,
                                 text: "\(paid), \(why): compensate \(c.owed) × \(t.productID) to user \(c.userID)"
                                     + (order.map { ", order \($0.orderID)\(match)" } ?? ""),
                                 userID: c.userID, orderID: order?.orderID, grantIDs: active.map(\.grantID), owed: c.owed,
                                 report: .compensate, findingKeys: [row.findingKey])
        }
        if let u = decision.unattributed.first(where: { $0.transactionID == transactionID }) {
            return LookupVerdict(kind: .unknownToUs,
                                 text: "\(paid) (\(units(of: t)) × \(t.productID)), but no upload, order, history or grant of ours "
                                     + "ties it to a user: ask the customer for their user id",
                                 report: .unattributed, findingKeys: [u.findingKey])
        }
        let covered = active.reduce(0) { $0 + $1.quantity }
        if covered >= units(of: t), let first = active.first {
            let list = active.map { "grant \($0.grantID), \(UTC.minute($0.grantedAt))" }.joined(separator: "; ")
            let twice = duplicates.isEmpty ? ""
                : "; duplicate grant \(duplicates.map(\.grantID).joined(separator: ", ")) (duplicate_grants.csv)"
            return LookupVerdict(kind: .granted, text: "\(paid), granted to user \(first.userID) (\(list))\(twice): nothing to do",
                                 userID: first.userID, orderID: first.orderID, grantIDs: active.map(\.grantID),
                                 report: duplicates.isEmpty ? nil : .duplicateGrants, findingKeys: duplicates.map(\.findingKey))
        }
        // Owed units but no compensation: the rule that held it back (Compensate.candidates' guards).
        guard let user = known.userID else {
            return LookupVerdict(kind: .unknownToUs,
                                 text: "\(paid) (\(units(of: t)) × \(t.productID)), but we have no upload, order or grant for it: "
                                     + "ask the customer for their user id")
        }
        guard known.productType != nil else {
            return LookupVerdict(kind: .unknownProduct,
                                 text: "\(paid), product \(t.productID) has no valid row in iap_products (input_errors.csv): "
                                     + "no rule judges it until the product is fixed", userID: user)
        }
        guard Compensate.isInWindow(t.purchaseDate, settings: settings) else {
            return LookupVerdict(kind: .outsideWindow,
                                 text: "\(paid), not granted to user \(user), but before the night's \(settings.windowDays)-day window: "
                                     + "the night does not compensate it; decide by hand", userID: user,
                                 grantIDs: active.map(\.grantID))
        }
        return LookupVerdict(kind: .restore,
                             text: "\(paid), a restore: user \(user) already holds this purchase: nothing owed",
                             userID: user, grantIDs: active.map(\.grantID))
    }
}

extension Lookup {
    /// Why a compensation is owed, in words: never granted, revoked without a refund, or granted
    /// in part (`granted` units of the purchase's).
    static func why(_ c: CompensationCandidate, granted: Int) -> String {
        switch c.reason {
        case .paidNotGranted: return "never granted"
        case .revokedNotRefunded: return "granted, then revoked without a refund"
        case .partiallyGranted: return "granted \(granted) of \(units(of: c.transaction))"
        }
    }
}

extension UTC {
    /// `2026-11-12 08:01` (UTC, to the minute): how people read a time in a sentence.
    public static func minute(_ ms: EpochMillis) -> String {
        let t = timestamp(ms)   // 2026-11-12T08:01:45Z
        return String(t.prefix(10)) + " " + String(t.dropFirst(11).prefix(5))
    }
}
