// `iap-reconcile lookup GPA.…` (or `--token`): what customer service should do about one Google
// Play purchase, read from the decision of Play's rules (`PlayRules.decide`) on today's facts.

public enum PlayLookup {
    /// The verdict on `facts`' purchase, first that fits: claw back, a tester's, not paid (unknown
    /// token, pending, cancelled), refunded, compensate, granted, then the rule that held a
    /// compensation back. `inferredOrder`: the order the inferred match gives a compensation
    /// without an exact order (the caller runs it across purchases). An acknowledgement still due
    /// is said after the verdict.
    public static func verdict(
        _ facts: PlayFacts, decision d: PlayDecision, inferredOrder: OrderRef? = nil,
        settings: DecisionSettings
    ) -> LookupVerdict {
        var v = judged(facts, decision: d, inferredOrder: inferredOrder, settings: settings)
        if let a = d.acknowledge.first {
            v.text +=
                "; not acknowledged: acknowledge token \(facts.purchase.token) before \(UTC.minute(a.acknowledgeBy)) UTC"
                + (a.action == .overdue ? " (overdue: Google may have refunded it)" : "") + " (acknowledge.csv)"
        }
        return v
    }

    static func judged(
        _ facts: PlayFacts, decision d: PlayDecision, inferredOrder: OrderRef?,
        settings: DecisionSettings
    ) -> LookupVerdict {
        let p = facts.purchase
        let grants = facts.grants.sorted(by: grantedEarlier)
        let active = grants.filter(\.isActive)
        let paid = p.completedAt.map { "paid \(UTC.minute($0)) UTC" } ?? "not completed"
        let voided = PlayVoided(facts)
        let what = "\(p.units) × \(p.lines.map(\.productID).joined(separator: " "))"
        let key = { (k: String) in PlayRules.findingKeyPrefix + k }
        if let first = d.clawbacks.first {
            let why: String
            switch first.reason {
            case .invalidReceipt: why = "Google knows no such purchase token"
            case .sandboxTransaction: why = "a test purchase (no money was paid)"
            case .cancelled: why = "cancelled at Google (never paid)"
            case .chargeback: why = "charged back on \(voided.latest.map { UTC.minute($0.voidedAt) } ?? "?") UTC"
            case .unacknowledged:
                why = "refunded on \(voided.latest.map { UTC.minute($0.voidedAt) } ?? "?") UTC because nobody acknowledged it"
            default: why = "refunded on \(voided.latest.map { UTC.minute($0.voidedAt) } ?? "?") UTC"
            }
            let units = d.clawbacks.reduce(0) { $0 + $1.quantity }
            return LookupVerdict(
                kind: .clawBack,
                text: "\(paid), \(why), goods still granted (grant \(d.clawbacks.map(\.grantID).joined(separator: ", "))) "
                    + "to user \(first.userID): claw back \(units) unit\(units == 1 ? "" : "s")",
                userID: first.userID, orderID: first.orderID, grantIDs: d.clawbacks.map(\.grantID),
                report: .clawback, findingKeys: d.clawbacks.map { key($0.findingKey) })
        }
        if p.test {
            return LookupVerdict(
                kind: .sandbox, text: "a test purchase (\(what)): no money was paid, nothing to compensate",
                userID: active.first?.userID, grantIDs: active.map(\.grantID))
        }
        switch p.verdict {
        case .unknown:
            return LookupVerdict(kind: .notPaid, text: "Google knows no such purchase token: nothing was paid, nothing to do")
        case .pending:
            return LookupVerdict(
                kind: .notPaid, text: "payment pending at Google (\(what)): nothing is owed until it completes",
                userID: facts.userID)
        case .cancelled:
            return LookupVerdict(kind: .notPaid, text: "cancelled at Google (\(what)): never paid, nothing to do", userID: facts.userID)
        case .purchased: break
        }
        if let latest = voided.latest, voided.total >= p.units {
            return LookupVerdict(
                kind: .refunded,
                text: "\(paid), refunded on \(UTC.minute(latest.voidedAt)) UTC (Google's voidedReason "
                    + "\(latest.reason)); nothing is granted any more: nothing to do",
                userID: facts.userID ?? grants.first?.userID)
        }
        let duplicates = d.duplicates
        if let c = d.compensations.first {
            let order = c.exactOrder ?? inferredOrder
            let why = Lookup.why(c, granted: Compensate.activeUnits(active))
            let match = c.exactOrder != nil ? "" : inferredOrder != nil ? " (inferred)" : ""
            let rows = Decide.matchOrders(d.compensations, openOrders: [])
            return LookupVerdict(
                kind: .compensate,
                text:
                    "\(paid), \(why): compensate \(d.compensations.map { "\($0.owed) × \($0.transaction.productID)" }.joined(separator: ", ")) "
                    + "to user \(c.userID)" + (order.map { ", order \($0.orderID)\(match)" } ?? ""),
                userID: c.userID, orderID: order?.orderID, grantIDs: active.map(\.grantID),
                owed: d.compensations.reduce(0) { $0 + $1.owed }, report: .compensate,
                findingKeys: rows.map { key(PlayRules.compensationKey($0)) })
        }
        if Compensate.activeUnits(active) >= p.units - voided.total, let first = active.first {
            let list = active.map { "grant \($0.grantID), \(UTC.minute($0.grantedAt))" }.joined(separator: "; ")
            let twice =
                duplicates.isEmpty
                ? ""
                : "; duplicate grant \(duplicates.map(\.grantID).joined(separator: ", ")) (duplicate_grants.csv)"
            return LookupVerdict(
                kind: .granted, text: "\(paid), granted to user \(first.userID) (\(list))\(twice): nothing to do",
                userID: first.userID, orderID: first.orderID, grantIDs: active.map(\.grantID),
                report: duplicates.isEmpty ? nil : .duplicateGrants, findingKeys: duplicates.map { key($0.findingKey) })
        }
        guard let user = facts.userID else {
            return LookupVerdict(
                kind: .unknownToUs,
                text: "\(paid) (\(what)), but no upload, order or grant of ours ties it to a user: "
                    + "ask the customer for their user id",
                report: d.unattributed.isEmpty ? nil : .unattributed,
                findingKeys: d.unattributed.map { key(PlayRules.unattributedKey($0)) })
        }
        if let unknown = p.lines.first(where: { facts.products[$0.productID] == nil }) {
            return LookupVerdict(
                kind: .unknownProduct,
                text: "\(paid), product \(unknown.productID) has no valid Google Play row in iap_products (input_errors.csv): "
                    + "no rule judges it until the product is fixed", userID: user)
        }
        return LookupVerdict(
            kind: .outsideWindow,
            text: "\(paid), not granted to user \(user), but before the night's \(settings.windowDays)-day window: "
                + "the night does not compensate it; decide by hand", userID: user, grantIDs: active.map(\.grantID))
    }
}
