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
func units(of transaction: AppleTransaction) -> Int { max(1, transaction.quantity) }

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
    /// Apple's view of each transaction id: the production one when known there, else the sandbox one.
    private let appleByID: [String: KnownTransaction]

    init(_ family: Family) {
        var seen = Set<String>()
        transactions = family.transactions.sorted {
            ($0.transaction.transactionID, $0.transaction.environment.rawValue)
                < ($1.transaction.transactionID, $1.transaction.environment.rawValue)
        }.filter { seen.insert($0.transaction.transactionID + "|" + $0.transaction.environment.rawValue).inserted }
        grants = family.grants.filter { $0.productType != nil }.sorted { grantedEarlier($0.grant, $1.grant) }
        var byID: [String: KnownTransaction] = [:]
        for known in transactions {
            let id = known.transaction.transactionID
            if byID[id] == nil || known.transaction.environment == .production { byID[id] = known }
        }
        appleByID = byID
    }

    /// Apple's transaction for an id (production preferred); nil when Apple never showed it in a valid answer.
    func apple(_ transactionID: String) -> AppleTransaction? { appleByID[transactionID]?.transaction }

    /// What the job knows of a transaction id (production preferred).
    func known(_ transactionID: String) -> KnownTransaction? { appleByID[transactionID] }

    /// Apple showed the transaction in a valid answer, in either environment.
    func appleShowed(_ transactionID: String) -> Bool { appleByID[transactionID] != nil }

    /// Apple knows the transaction in the sandbox alone.
    func isSandboxOnly(_ transactionID: String) -> Bool { appleByID[transactionID]?.transaction.environment == .sandbox }

    /// The Apple transactions, one per id, production preferred.
    var appleTransactions: [AppleTransaction] {
        appleByID.keys.sorted().compactMap { appleByID[$0]?.transaction }
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
