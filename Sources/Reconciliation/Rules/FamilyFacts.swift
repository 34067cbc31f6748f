// Lookups over one family that several rules share (docs/rules.md "Families",
// "Which Apple transactions count").
//
// Rows the rules skip: a grant whose product type is unknown (nil: its product_id is not in
// iap_products) takes part in no rule, not even as cover for a transaction; the data path has
// already reported it in input_errors.csv ("left out of the decisions"). A transaction whose
// product type, receipt or user is unknown is never a compensation candidate, but it still
// tells the rules what Apple showed (refunds, sandbox-only, web order line items).

let millisPerHour: EpochMillis = 3_600_000
let millisPerDay: EpochMillis = 86_400_000

/// Units a transaction stands for: Apple's `quantity`, at least 1.
public func units(of transaction: AppleTransaction) -> Int { max(1, transaction.quantity) }

/// Order of consideration for grants: `granted_at`, then `grant_id`.
func grantedEarlier(_ a: Grant, _ b: Grant) -> Bool {
    (a.grantedAt, a.grantID) < (b.grantedAt, b.grantID)
}

struct FamilyFacts {
    /// The family's Apple transactions, sorted by `transaction_id` then environment.
    let transactions: [KnownTransaction]
    /// The family's grants that take part in the rules (known product type), sorted by
    /// `granted_at` then `grant_id`; active and revoked.
    let grants: [GrantFacts]
    /// Apple's view of each transaction id, as its place in `transactions`: the production one when
    /// known there, else the sandbox one. nil for a family of a few transactions (nearly all): a
    /// scan of `transactions` is cheaper than hashing them, and finds the same one.
    private let appleByID: [String: Int]?
    static let scanUpTo = 8

    init(_ family: Family) {
        if family.transactions.count <= 1 {
            transactions = family.transactions
        } else {
            // Sorted, so a repeated (id, environment) is next to its first: kept once.
            let sorted = family.transactions.sorted {
                ($0.transaction.transactionID, $0.transaction.environment.rawValue)
                    < ($1.transaction.transactionID, $1.transaction.environment.rawValue)
            }
            var unique: [KnownTransaction] = []
            unique.reserveCapacity(sorted.count)
            for known in sorted {
                if let last = unique.last, last.transaction.transactionID == known.transaction.transactionID,
                   last.transaction.environment == known.transaction.environment { continue }
                unique.append(known)
            }
            transactions = unique
        }
        grants = family.grants.count == 1 && family.grants[0].productType != nil ? family.grants
            : family.grants.filter { $0.productType != nil }.sorted { grantedEarlier($0.grant, $1.grant) }
        if transactions.count <= Self.scanUpTo {
            appleByID = nil
        } else {
            var byID: [String: Int] = [:]
            for (i, known) in transactions.enumerated() {
                let id = known.transaction.transactionID
                if byID[id] == nil || known.transaction.environment == .production { byID[id] = i }
            }
            appleByID = byID
        }
    }

    /// Apple's transaction for an id (production preferred); nil when Apple never showed it in a valid answer.
    func apple(_ transactionID: String) -> AppleTransaction? { known(transactionID)?.transaction }

    /// What the job knows of a transaction id (production preferred).
    func known(_ transactionID: String) -> KnownTransaction? { knownIndex(transactionID).map { transactions[$0] } }

    /// The place in `transactions` of what the job knows of a transaction id (production
    /// preferred). The rules that ask one field of it read that field in place: a copy of the
    /// whole `KnownTransaction` retains and releases each of its strings, once per grant.
    func knownIndex(_ transactionID: String) -> Int? {
        if let appleByID { return appleByID[transactionID] }
        var found: Int?
        for i in transactions.indices where transactions[i].transaction.transactionID == transactionID {
            if found == nil || transactions[i].transaction.environment == .production { found = i }
        }
        return found
    }

    /// Apple showed the transaction in a valid answer, in either environment.
    func appleShowed(_ transactionID: String) -> Bool {
        if let appleByID { return appleByID[transactionID] != nil }
        return transactions.contains { $0.transaction.transactionID == transactionID }
    }

    /// Apple knows the transaction in the sandbox alone.
    func isSandboxOnly(_ transactionID: String) -> Bool {
        knownIndex(transactionID).map { transactions[$0].transaction.environment } == .sandbox
    }

    /// Every grant (active or revoked) of a transaction.
    func grants(of transactionID: String) -> [Grant] {
        grants.lazy.map(\.grant).filter { $0.transactionID == transactionID }
    }

    /// The active grants of a transaction, any user.
    func activeGrants(of transactionID: String) -> [Grant] {
        grants(of: transactionID).filter(\.isActive)
    }

    /// Every active grant of the family.
    var activeGrants: [Grant] { grants.map(\.grant).filter(\.isActive) }
}
