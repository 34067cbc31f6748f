// `iap-reconcile lookup`: what customer service should do about one purchase, from what Apple
// signed and what our data shows (seed 001: a customer sends the order ID of Apple's invoice,
// staff confirm the missed order and compensate). No I/O: the command gathers the facts.

/// What our source relations show about one Apple transaction.
public struct OurRecord: Sendable, Equatable {
    /// Every grant of the transaction, revoked or not.
    public var grants: [Grant] = []
    /// Orders linked to it (`iap_orders.transaction_id`, an upload's `order_id`, or an order whose
    /// id is the transaction's `appAccountToken`).
    public var orders: [Order] = []
    /// Users who uploaded it (`iap_receipts.transaction_id`, or a verified upload that showed it),
    /// earliest upload first.
    public var uploaders: [String] = []

    public init(grants: [Grant] = [], orders: [Order] = [], uploaders: [String] = []) {
        self.grants = grants
        self.orders = orders
        self.uploaders = uploaders
    }
}

/// One transaction's verdict: a kind for tools, and one sentence for people.
public struct LookupVerdict: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Paid and granted: nothing to do.
        case granted
        /// Paid, never (fully) granted, and we know to whom: compensate.
        case compensate
        /// Refunded (or revoked), goods still granted: claw back.
        case clawBack = "claw_back"
        /// Refunded and nothing is granted any more: nothing to do.
        case refunded
        /// Apple knows it, we have no upload, order or grant: ask the customer who they are.
        case unknownToUs = "unknown_to_us"
        /// A sandbox (or Xcode) purchase: no money was paid.
        case sandbox
    }

    public var kind: Kind
    public var text: String
    /// The user the verdict concerns (compensate, claw back, granted), when known.
    public var userID: String?
    public var orderID: String?
    public var grantIDs: [String]
    /// Units still owed (compensate).
    public var owed: Int?
}

public enum Lookup {
    /// The verdict for `t` (as Apple signed it; `revoked` when Apple revoked it, with its date)
    /// given `ours`.
    public static func verdict(_ t: AppleTransaction, revokedAt: EpochMillis?, familyRevoke: Bool,
                               ours: OurRecord) -> LookupVerdict {
        let active = ours.grants.filter { $0.revokedAt == nil }.sorted { ($0.grantedAt, $0.grantID) < ($1.grantedAt, $1.grantID) }
        let paid = "paid \(UTC.minute(t.purchaseDate)) UTC"
        let product = t.productID
        if t.environment == .sandbox {
            return LookupVerdict(kind: .sandbox, text: "sandbox purchase \(UTC.minute(t.purchaseDate)) UTC: no money was paid, nothing to compensate",
                                 userID: active.first?.userID, orderID: nil, grantIDs: active.map(\.grantID), owed: nil)
        }
        if let revokedAt {
            let what = familyRevoke ? "family sharing revoked" : "refunded"
            if !active.isEmpty {
                let list = active.map(\.grantID).joined(separator: ", ")
                return LookupVerdict(kind: .clawBack,
                                     text: "\(paid), \(what) on \(UTC.minute(revokedAt)) UTC, goods still granted (grant \(list)) to user \(active[0].userID): claw back",
                                     userID: active[0].userID, orderID: active[0].orderID, grantIDs: active.map(\.grantID), owed: nil)
            }
            return LookupVerdict(kind: .refunded, text: "\(paid), \(what) on \(UTC.minute(revokedAt)) UTC; nothing is granted any more: nothing to do",
                                 userID: ours.grants.first?.userID ?? ours.uploaders.first, orderID: nil, grantIDs: [], owed: nil)
        }
        let covered = active.reduce(0) { $0 + $1.quantity }
        if covered >= t.quantity, let first = active.first {
            let grants = active.map { "grant \($0.grantID), \(UTC.minute($0.grantedAt))" }.joined(separator: "; ")
            return LookupVerdict(kind: .granted, text: "\(paid), granted to user \(first.userID) (\(grants)): nothing to do",
                                 userID: first.userID, orderID: first.orderID, grantIDs: active.map(\.grantID), owed: nil)
        }
        let user = active.first?.userID ?? ours.orders.first?.userID ?? ours.uploaders.first
            ?? ours.grants.first?.userID
        guard let user else {
            return LookupVerdict(kind: .unknownToUs,
                                 text: "\(paid) (\(t.quantity) × \(product)), but we have no upload, order or grant for it: ask the customer for their user id",
                                 userID: nil, orderID: nil, grantIDs: [], owed: nil)
        }
        let owed = t.quantity - covered
        let order = ours.orders.first { $0.userID == user } ?? ours.orders.first
        let why = active.isEmpty ? (ours.grants.isEmpty ? "never granted" : "granted, then revoked without a refund")
            : "granted \(covered) of \(t.quantity)"
        return LookupVerdict(kind: .compensate,
                             text: "\(paid), \(why): compensate \(owed) × \(product) to user \(user)" + (order.map { ", order \($0.orderID)" } ?? ""),
                             userID: user, orderID: order?.orderID, grantIDs: active.map(\.grantID), owed: owed)
    }
}

extension UTC {
    /// `2026-11-12 08:01` (UTC, to the minute): how people read a time in a sentence.
    public static func minute(_ ms: EpochMillis) -> String {
        let t = timestamp(ms)   // 2026-11-12T08:01:45Z
        return String(t.prefix(10)) + " " + String(t.dropFirst(11).prefix(5))
    }
}
