// Google Play's rules (docs/rules.md "Google Play"): the rules of the App Store where the stores
// agree, named where they differ. One purchase token at a time; pure, no I/O.
//
// Where the stores differ:
// - a purchase not acknowledged within three days is refunded by Google: `acknowledge.csv`;
// - a refund may return some units only (`voidedQuantity`): exactly those units are clawed back;
// - a refund's reason names a chargeback (7) or the shop's missing acknowledgement (8);
// - Google's order may contradict its voided list: the refund is listed with both.

/// Everything Play's rules decide for one purchase token.
public struct PlayDecision: Sendable, Equatable {
    /// compensate.csv: paid units no standing grant covers (before the inferred order match).
    public var compensations: [CompensationCandidate] = []
    public var duplicates: [DuplicateGrantRow] = []
    public var clawbacks: [ClawbackRow] = []
    public var refunds: [PlayRefundRow] = []
    public var acknowledge: [AcknowledgeRow] = []
    /// unattributed.csv: a production purchase nothing of ours ties to a user.
    public var unattributed: [UnattributedRow] = []

    public init() {}
}

public enum PlayRules {
    /// Google refunds a purchase not acknowledged within this long (Google, "One-time purchase
    /// lifecycle"; from when it does not say: the rules count from `purchaseCompletionTime`).
    public static let acknowledgeWithin: EpochMillis = 3 * 86_400_000
    /// How far back acknowledge.csv looks: the night asks Google again about an unacknowledged
    /// purchase completed less than four days ago, never older ones, so an older answer is stale.
    public static let acknowledgeListedFor: EpochMillis = 4 * 86_400_000
    /// The beginning of a Play finding's key in the findings history; the App Store's key of the
    /// same kind follows it. The App Store's keys begin with their report's word, so the two never
    /// meet, and a grant id used in both stores is two findings.
    public static let findingKeyPrefix = "google_play|"

    /// Every rule for one purchase token. Rows come in a fixed order: by line, then grants by
    /// `granted_at` and `grant_id`.
    public static func decide(_ facts: PlayFacts, settings: DecisionSettings) -> PlayDecision {
        var decision = PlayDecision()
        let grants = facts.grants.filter { facts.products[$0.productID] != nil }.sorted(by: grantedEarlier)
        let voided = PlayVoided(facts)
        let wholly = whollyClawedBack(facts, voided: voided)
        var standing = grants.filter(\.isActive)
        if let reason = wholly {
            decision.clawbacks = standing.map { clawback($0, units: $0.quantity, reason: reason, facts, voided) }
            standing = []
        } else {
            // Each product of the purchase against its own units (one line: every grant of it).
            let lines = facts.purchase.lines
            for (i, line) in lines.enumerated() {
                var ofLine = lines.count == 1 ? standing : standing.filter { $0.productID == line.productID }
                let duplicates = duplicates(ofLine, units: line.units, facts)
                let duplicated = Set(duplicates.map(\.grantID))
                ofLine.removeAll { duplicated.contains($0.grantID) }
                decision.duplicates += duplicates
                decision.clawbacks += partialClawbacks(standing: ofLine, paid: line.units - voided.perLine[i], facts, voided)
            }
            decision.duplicates += crossAccount(standing.filter { g in !decision.duplicates.contains { $0.grantID == g.grantID } }, facts)
            let order = Dictionary(standing.enumerated().map { ($1.grantID, $0) }, uniquingKeysWith: { a, _ in a })
            decision.duplicates.sort { (order[$0.grantID] ?? 0) < (order[$1.grantID] ?? 0) }
            decision.clawbacks.sort { (order[$0.grantID] ?? 0) < (order[$1.grantID] ?? 0) }
        }
        decision.compensations = compensations(facts, grants: grants, voided: voided, settings: settings)
        decision.unattributed = unattributed(facts, grants: grants, voided: voided, settings: settings)
        decision.refunds = PlayRefunds.rows(facts, grants: grants, voided: voided, settings: settings)
        decision.acknowledge = PlayAcknowledge.rows(facts, grants: grants, voided: voided, settings: settings)
        return decision
    }

    /// A reason to claw back every active grant of the purchase, in this order: Google knows no such
    /// token (`invalid_receipt`); a tester's purchase (`sandbox_transaction`); every unit voided
    /// (the latest record's reason); Google says it was cancelled, never paid (`cancelled`). Nil
    /// when the payment stands, in whole or in part.
    static func whollyClawedBack(_ facts: PlayFacts, voided: PlayVoided) -> ClawbackReason? {
        let purchase = facts.purchase
        if purchase.verdict == .unknown { return .invalidReceipt }
        if purchase.test { return .sandboxTransaction }
        if let latest = voided.latest, voided.total >= purchase.units { return reason(of: latest) }
        if purchase.verdict == .cancelled { return .cancelled }
        return nil
    }

    /// A voided record's claw-back reason: `chargeback` (7), `unacknowledged` (8: goods given,
    /// money gone), else `refunded`.
    public static func reason(of void: PlayVoid) -> ClawbackReason {
        switch void.reason {
        case PlayVoid.chargeback: return .chargeback
        case PlayVoid.unacknowledged: return .unacknowledged
        default: return .refunded
        }
    }

    /// Some units voided: the standing grants of a product hold more units than are still paid
    /// for (`paid`). The excess is clawed back from the latest grants first, each unit once.
    static func partialClawbacks(standing: [Grant], paid: Int, _ facts: PlayFacts, _ voided: PlayVoided) -> [ClawbackRow] {
        guard let latest = voided.latest, facts.purchase.verdict == .purchased else { return [] }
        var excess = standing.reduce(0) { $0 + $1.quantity } - paid
        var rows: [ClawbackRow] = []
        for grant in standing.reversed() where excess > 0 {
            let units = min(excess, grant.quantity)
            guard units > 0 else { continue }
            rows.append(clawback(grant, units: units, reason: reason(of: latest), facts, voided))
            excess -= units
        }
        return rows.reversed()
    }

    static func clawback(
        _ grant: Grant, units: Int, reason: ClawbackReason, _ facts: PlayFacts,
        _ voided: PlayVoided
    ) -> ClawbackRow {
        let byVoid = [.refunded, .chargeback, .unacknowledged].contains(reason)
        return ClawbackRow(
            grantID: grant.grantID, userID: grant.userID, orderID: grant.orderID, productID: grant.productID,
            productType: facts.products[grant.productID]!.type, quantity: units, transactionID: grant.transactionID,
            originalTransactionID: grant.originalTransactionID, grantedAt: grant.grantedAt, reason: reason,
            cancellationDate: byVoid ? voided.latest?.voidedAt : nil,
            cancellationReason: byVoid ? voided.latest.map { String($0.reason) } : nil,
            amount: price(facts, productID: grant.productID).amount(units: units, transactionQuantity: facts.purchase.units))
    }

    /// What one unit of `productID` cost: Google's order total over the purchase's units when the
    /// purchase has one line (a total over several products says nothing of each), else the list price.
    static func price(_ facts: PlayFacts, productID: String) -> PriceFacts {
        PriceFacts(apple: facts.purchase.lines.count == 1 ? facts.order?.total : nil, listUnit: facts.products[productID]?.listUnit)
    }

    /// duplicate_grants.csv's `same_transaction` for one product of a Play purchase: its grants are
    /// kept in order while they add up to at most its `units`, the first always; later ones are
    /// duplicates of the first. A restored Play purchase is the same order, so a restore granted
    /// as a purchase is `same_transaction`.
    static func duplicates(_ standing: [Grant], units: Int, _ facts: PlayFacts) -> [DuplicateGrantRow] {
        guard standing.count > 1, let first = standing.first else { return [] }
        var delivered = first.quantity
        var full = false
        var rows: [DuplicateGrantRow] = []
        for grant in standing.dropFirst() {
            if !full && delivered + grant.quantity <= units {
                delivered += grant.quantity
            } else {
                full = true
                rows.append(duplicate(grant, .sameTransaction, kept: first, facts))
            }
        }
        return rows
    }

    /// `cross_account`: a non-consumable's kept grants of other users than the earliest's.
    static func crossAccount(_ kept: [Grant], _ facts: PlayFacts) -> [DuplicateGrantRow] {
        let owned = kept.filter { facts.products[$0.productID]?.type == .nonConsumable }
        guard let earliest = owned.first else { return [] }
        return owned.filter { $0.userID != earliest.userID }.map { duplicate($0, .crossAccount, kept: earliest, facts) }
    }

    static func duplicate(_ grant: Grant, _ kind: DuplicateKind, kept: Grant, _ facts: PlayFacts) -> DuplicateGrantRow {
        DuplicateGrantRow(
            grantID: grant.grantID, userID: grant.userID, orderID: grant.orderID, productID: grant.productID,
            productType: facts.products[grant.productID]!.type, transactionID: grant.transactionID,
            originalTransactionID: grant.originalTransactionID, kind: kind, keptGrantID: kept.grantID, grantedAt: grant.grantedAt)
    }

    /// unattributed.csv for Play: a production purchase Google calls PURCHASED, completed in the
    /// window, not every unit voided, never granted, that nothing of ours ties to a user.
    static func unattributed(
        _ facts: PlayFacts, grants: [Grant], voided: PlayVoided,
        settings: DecisionSettings
    ) -> [UnattributedRow] {
        let p = facts.purchase
        guard p.verdict == .purchased, !p.test, facts.userID == nil, facts.grants.isEmpty, voided.total < p.units,
            let completed = p.completedAt, settings.inWindow(completed)
        else { return [] }
        return p.lines.map { line in
            UnattributedRow(
                transactionID: p.transactionID, productID: line.productID, purchaseDate: completed,
                amount: price(facts, productID: line.productID).amount(units: line.units, transactionQuantity: line.units),
                storefront: nil)
        }
    }

    /// A Play compensation's key (before `findingKeyPrefix`): one per purchase and product, so the
    /// products of one purchase are findings of their own.
    public static func compensationKey(_ row: CompensationRow) -> String {
        "compensate|\(row.transactionID)|\(row.productID)"
    }

    /// A Play unattributed row's key (before `findingKeyPrefix`), one per purchase and product.
    public static func unattributedKey(_ row: UnattributedRow) -> String {
        "unattributed|\(row.transactionID)|\(row.productID)"
    }

    /// compensate.csv for Play: a production purchase Google calls PURCHASED, completed in the
    /// window, with a user and known products, whose units still paid for (less those voided) its
    /// active grants do not cover. PENDING and CANCELLED are no payment.
    static func compensations(
        _ facts: PlayFacts, grants: [Grant], voided: PlayVoided,
        settings: DecisionSettings
    ) -> [CompensationCandidate] {
        let purchase = facts.purchase
        guard purchase.verdict == .purchased, !purchase.test, let completed = purchase.completedAt,
            settings.inWindow(completed), let userID = facts.userID
        else { return [] }
        var found: [CompensationCandidate] = []
        for (i, line) in purchase.lines.enumerated() {
            guard let product = facts.products[line.productID] else { continue }
            let paid = line.units - voided.perLine[i]
            let ofLine = purchase.lines.count == 1 ? grants : grants.filter { $0.productID == line.productID }
            guard paid > 0, let reason = Compensate.reason(grants: ofLine, quantity: paid) else { continue }
            let owed = paid - Compensate.activeUnits(ofLine)
            let transaction = AppleTransaction(
                transactionID: purchase.transactionID, originalTransactionID: purchase.transactionID,
                productID: line.productID, quantity: line.units, purchaseDate: completed, environment: .production)
            found.append(
                CompensationCandidate(
                    transaction: transaction, productType: product.type, userID: userID, receiptID: facts.receiptID, owed: owed,
                    reason: reason, exactOrder: facts.exactOrder,
                    amount: price(facts, productID: line.productID).amount(units: owed, transactionQuantity: line.units),
                    source: facts.receiptID == nil ? .notification : .receipt))
        }
        return found
    }
}

/// The purchase's voided units, per line: each record takes its `voidedQuantity` (a record naming
/// none: every unit left) from the lines in Google's order, records in time order. A record
/// repeated (Google lists late records again) was stored once.
struct PlayVoided {
    var perLine: [Int]
    var total: Int { perLine.reduce(0, +) }
    /// The latest record: its date and reason are the refund's.
    var latest: PlayVoid?

    init(_ facts: PlayFacts) {
        let lines = facts.purchase.lines.map(\.units)
        perLine = lines.map { _ in 0 }
        let records = facts.voids.sorted { ($0.voidedAt, $0.quantity ?? Int.max) < ($1.voidedAt, $1.quantity ?? Int.max) }
        latest = records.last
        for record in records {
            var left = record.quantity.map { max(0, $0) } ?? Int.max
            for i in lines.indices where left > 0 {
                let take = min(left, lines[i] - perLine[i])
                perLine[i] += take
                left -= take
            }
        }
    }
}
