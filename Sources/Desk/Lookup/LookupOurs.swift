import AppStore
import NightDecide
import NightLearn
import NightReview
import Postgres
import Reconciliation
import StoreIO

// `lookup --our-order ID`, `lookup --user ID [--days N]`, and `lookup --transaction ID` without
// the Server API: from what customer service holds. Our data names the Apple transactions (an
// order's `transaction_id`, the grants and uploads of the order or user, what the nights learned
// of those uploads, the transactions whose `appAccountToken` is one of the orders, those
// transaction history returned for the user); their families are decided exactly as for
// `--transaction` (LookupFamilies.swift, `Lookup.verdict`). With Server API credentials each of
// those transactions is also asked of Apple (Get Transaction Info) and Apple's answer merged in, as
// `--transaction` does; without them the answer is what the nights learned, and says so.

extension LookupRun {
    func ours(_ target: LookupTarget) throws -> LookupResult {
        let (kind, id) = target.asked
        return try reading { db, source, settings in
            let families = LookupFamilies(db: db, source: source, settings: settings)
            let side = try OurSide.gather(target, db: db, source: source, settings: settings, families: families)
            var fresh: [SignedTransaction] = []
            var asked: Set<String> = []
            var caller = settings.serverAPI.map { ServerAPICaller(api: $0, settings: settings) }
            /// Get Transaction Info for the ids not asked yet, each verified; false when none was left to ask.
            func ask(_ ids: Set<String>) throws -> Bool {
                guard caller != nil else { return false }
                let new = ids.subtracting(asked).filter(OurSide.isTransactionID).sorted()
                asked.formUnion(new)
                var signed: [String] = []
                for tid in new {
                    if let jws = try askTransaction(tid, caller: &caller!) { signed.append(jws) }
                }
                fresh += try verify(signed)
                return !new.isEmpty
            }
            _ = try ask(side.askable)
            var decided = try families.decide(fresh, keys: side.keys)
            var (timed, orders) = try answer(side, target: target, decided: decided, fresh: fresh, db: db, settings: settings)
            // A purchase our rows do not name but whose verdict names the order (a purchase of one of
            // its receipts, an inferred match): Apple is asked about it too, and the families decided again.
            if try ask(Set(timed.compactMap { $0.item?.transaction_id })) {
                decided = try families.decide(fresh, keys: side.keys.union(fresh.map(\.transaction.originalTransactionID)))
                (timed, orders) = try answer(side, target: target, decided: decided, fresh: fresh, db: db, settings: settings)
            }
            let apple = caller == nil || asked.isEmpty ? "not_asked" : fresh.isEmpty ? "not_found" : "found"
            timed.sort { ($0.at, $0.item?.transaction_id ?? "", $0.line) > ($1.at, $1.item?.transaction_id ?? "", $1.line) }
            let items = timed.compactMap(\.item)
            var lines = settings.serverAPI == nil ? [LookupResult.notAskedLine] : []
            var result = LookupResult(
                asked: kind, id: id, apple: apple,
                source: settings.serverAPI == nil ? LookupResult.fromOurData : LookupResult.fromApple,
                transactions: items, lines: [])
            switch target {
            case .order, .playOrder, .playToken: break
            case .transaction:
                if items.isEmpty {
                    lines.append(
                        settings.serverAPI == nil
                            ? "the nights have not learned transaction \(id) from Apple, and no grant of ours names it"
                            : "Apple knows no transaction \(id) in production or the sandbox for this app, and no grant of ours names it")
                }
                lines += timed.map(\.line)
            case .ourOrder:
                result.known = side.known
                result.orders = orders
                if !side.known && items.isEmpty {
                    lines.append(
                        "no order \(id) in iap_orders, and no receipt or grant of ours names it: check the id (our order "
                            + "id; Apple's invoice order ID, e.g. MK5TTTVWJH, goes to `iap-reconcile lookup ID`)")
                } else if orders.isEmpty {
                    lines.append(
                        "no order \(id) in iap_orders, but receipts or grants of ours name it"
                            + (items.isEmpty ? "; no verified payment known: \(Self.askForInvoice)" : ":"))
                }
                lines += orders.map(\.text) + timed.map(\.line)
            case .user(_, let days):
                result.known = side.known
                result.orders = orders
                result.days = days
                result.since = UTC.timestamp(side.since)
                let unpaid = orders.filter(\.paid_by.isEmpty).count
                lines.append(
                    "user \(id), the last \(days) days (since \(UTC.minute(side.since)) UTC): \(items.count) "
                        + (items.count == 1 ? "purchase" : "purchases")
                        + (unpaid > 0 ? ", \(unpaid) \(unpaid == 1 ? "order" : "orders") without a known payment" : "")
                        + (side.known ? "" : "; no order, receipt or grant of ours names this user"))
                lines += timed.map(\.line)
            }
            result.lines = lines
            return result
        }
    }

    static let askForInvoice =
        "if the customer paid, ask them for Apple's invoice order ID (on Apple's receipt e-mail, "
        + "e.g. MK5TTTVWJH) and run `iap-reconcile lookup` with it"

    /// A line of the answer and when it happened (newest first): a purchase, or an order of ours
    /// without a known payment (`--user`).
    struct Timed {
        var at: EpochMillis
        var item: LookupResult.Item?
        var line: String
    }

    /// The items of the purchases our side names, decided, and the orders asked about.
    private func answer(
        _ side: OurSide, target: LookupTarget, decided: LookupFamilies.Decided, fresh: [SignedTransaction],
        db: PGConnection, settings: JobSettings
    ) throws -> ([Timed], [LookupResult.OrderItem]) {
        // Every Apple transaction decided, one per id: production preferred, as the rules do.
        var known: [String: (KnownTransaction, Family, FamilyDecision)] = [:]
        for (key, family) in decided.families {
            guard let decision = decided.decisions[key] else { continue }
            for k in family.transactions {
                let tid = k.transaction.transactionID
                if let have = known[tid], have.0.transaction.environment == .production { continue }
                known[tid] = (k, family, decision)
            }
        }
        let revocations = Dictionary(fresh.map { ($0.transaction.transactionID, $0.revocationDate) }, uniquingKeysWith: { a, _ in a })
        var timed: [Timed] = []
        for tid in known.keys.sorted() {
            let (k, family, decision) = known[tid]!
            let t = k.transaction
            let v = try verdict(k, family: family, decision: decision, decided: decided, settings: settings)
            let wanted: Bool
            switch target {
            case .ourOrder(let orderID): wanted = side.listed.contains(tid) || v.orderID == orderID
            case .user: wanted = side.listed.contains(tid) && side.inDays(t.purchaseDate)
            case .transaction, .order, .playOrder, .playToken: wanted = side.listed.contains(tid)
            }
            guard wanted else { continue }
            let revoked = revocations[tid] ?? k.revocation.revocationDate ?? k.revocation.cancellationDate
            let item = try item(t, revocationDate: revoked ?? nil, verdict: v, db: db)
            timed.append(Timed(at: t.purchaseDate, item: item, line: LookupResult.line(item)))
        }
        // Grants of transactions Apple never showed the job: the night's decision on their family.
        for tid in side.grantOnly.sorted() where known[tid] == nil {
            guard let (family, decision) = decided.family(ofGrantsOf: tid),
                let (v, grants) = Self.grantVerdict(tid, family: family, decision: decision)
            else { continue }
            if case .user = target, !side.inDays(grants[0].grantedAt) { continue }
            let seen = try firstSeen(v.findingKeys, db: db)
            let first = grants[0]
            let item = LookupResult.Item(
                transaction_id: tid, original_transaction_id: first.originalTransactionID ?? "", product_id: first.productID,
                environment: nil, purchase_date: nil, quantity: grants.reduce(0) { $0 + $1.quantity }, revocation_date: nil,
                verdict: v.kind.rawValue, text: v.text + listed(v, seen), user_id: v.userID, order_id: v.orderID,
                grant_ids: v.grantIDs, owed: nil, report: v.report?.rawValue, first_seen: seen)
            timed.append(Timed(at: first.grantedAt, item: item, line: LookupResult.line(item)))
        }
        // The orders: what pays each, and the line of one without a known payment.
        var orders: [LookupResult.OrderItem] = []
        for o in side.orders {
            let paidBy = timed.compactMap(\.item).filter { item in
                if case .ourOrder = target { return true }
                return item.order_id == o.orderID || (o.transactionID != nil && item.transaction_id == o.transactionID)
            }.map(\.transaction_id).sorted()
            let head =
                "our order \(o.orderID): \(o.quantity) × \(o.productID) for user \(o.userID), created "
                + "\(UTC.minute(o.createdAt)) UTC, status \(o.status)"
            var text: String
            if !paidBy.isEmpty {
                text = head + "; paid by transaction \(paidBy.joined(separator: ", "))"
            } else {
                text = head + "; no verified payment known"
                if let t = o.transactionID { text += " (it names transaction \(t), which Apple has not shown the job)" }
                let waiting = side.waitingReceipts[o.orderID] ?? 0
                if waiting > 0 {
                    text +=
                        "; \(waiting) \(waiting == 1 ? "receipt" : "receipts") uploaded for it still "
                        + "\(waiting == 1 ? "waits" : "wait") for Apple's answer (unresolved.csv)"
                }
                text += ": " + Self.askForInvoice
                if case .user = target { timed.append(Timed(at: o.createdAt, item: nil, line: text)) }
            }
            orders.append(
                LookupResult.OrderItem(
                    order_id: o.orderID, user_id: o.userID, product_id: o.productID, status: o.status,
                    created_at: UTC.timestamp(o.createdAt), transaction_id: o.transactionID, quantity: o.quantity,
                    paid_by: paidBy, text: text))
        }
        return (timed, orders)
    }

    /// The verdict on the grants of a transaction Apple never showed the job, read from the
    /// night's decision on their family: claw back when the night does (`invalid_receipt`,
    /// `wrong_bundle`, `transaction_not_found`), else granted and nothing to do (the night lists
    /// nothing: its payment is unverified, not gone). Nil when none of them is active.
    static func grantVerdict(_ tid: String, family: Family, decision: FamilyDecision) -> (LookupVerdict, [Grant])? {
        let grants = family.grants.map(\.grant).filter { $0.transactionID == tid }
            .sorted { ($0.grantedAt, $0.grantID) < ($1.grantedAt, $1.grantID) }
        let active = grants.filter(\.isActive)
        guard let first = active.first else { return nil }
        let granted = "granted \(UTC.minute(grants[0].grantedAt)) UTC"
        let clawbacks = decision.clawbacks.filter { $0.transactionID == tid }
        if let c = clawbacks.first {
            let list = clawbacks.map(\.grantID).joined(separator: ", ")
            return (
                LookupVerdict(
                    kind: .clawBack,
                    text: "\(granted), Apple never showed this purchase: its payment is not proven (\(c.reason.rawValue)), "
                        + "goods still granted (grant \(list)) to user \(c.userID): claw back",
                    userID: c.userID, orderID: c.orderID, grantIDs: clawbacks.map(\.grantID),
                    report: .clawback, findingKeys: clawbacks.map(\.findingKey)), grants
            )
        }
        let duplicates = decision.duplicates.filter { $0.transactionID == tid }
        let list = active.map { "grant \($0.grantID), \(UTC.minute($0.grantedAt))" }.joined(separator: "; ")
        let twice =
            duplicates.isEmpty
            ? ""
            : "; duplicate grant \(duplicates.map(\.grantID).joined(separator: ", ")) (duplicate_grants.csv)"
        return (
            LookupVerdict(
                kind: .granted,
                text: "granted to user \(first.userID) (\(list))\(twice); Apple has not shown the job this purchase "
                    + "(no verified receipt, upload or notification of it yet): nothing to do",
                userID: first.userID, orderID: first.orderID, grantIDs: active.map(\.grantID),
                report: duplicates.isEmpty ? nil : .duplicateGrants, findingKeys: duplicates.map(\.findingKey)), grants
        )
    }
}
