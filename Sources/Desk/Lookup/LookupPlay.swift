// `lookup GPA.…` and `lookup --token`: one Google Play purchase, from what the nights learned of it
// (Google's answer, its voided records, its order's money) and the shop's Play rows today, decided
// by the night's Play rules (`PlayRules.decide`, `PlayLookup.verdict`). Google is not asked now.

import JobStore
import NightLearn
import PlayNight
import Postgres
import Reconciliation

extension LookupRun {
    func play(_ target: LookupTarget) throws -> LookupResult {
        let (asked, id) = target.asked
        let items: [LookupResult.Item] = try reading { db, _, settings in
            guard settings.storeRows != nil else { return [] }
            let S = settings.jobSchema.sql
            let tokens: [String]
            if case .playToken(let token) = target {
                tokens = [token]
            } else {
                tokens = try db.query("SELECT token FROM \(S).play_purchases WHERE order_id = \(id) ORDER BY token").rows.compactMap {
                    $0[0]
                }
            }
            guard !tokens.isEmpty else { return [] }
            let stage = PlayDecide(settings: settings, logger: .init(label: "iap-reconcile lookup"))
            let views = try SourceStore.googlePlay.viewsSchema(of: settings.jobSchema).sql
            try db.execute(stage.copiesSQL(views, temporary: true))
            let gather = PlayGather(settings: settings, products: try stage.products(db, rows: "pg_temp"), rows: "pg_temp")
            let rules = settings.decisionSettings
            return try gather.facts(db, tokens: tokens).map { facts in
                let decision = PlayRules.decide(facts, settings: rules)
                var inferred: OrderRef?
                if let c = decision.compensations.first, c.exactOrder == nil {
                    let open = try gather.openOrders(db, of: [c])
                    let rows = Decide.matchOrders([c], openOrders: open)
                    inferred = rows.first?.orderID.flatMap { o in open.first { $0.orderID == o } }.map {
                        OrderRef(orderID: $0.orderID, userID: $0.userID, productID: $0.productID, createdAt: $0.createdAt)
                    }
                }
                let v = PlayLookup.verdict(facts, decision: decision, inferredOrder: inferred, settings: rules)
                let p = facts.purchase
                let seen = try firstSeen(v.findingKeys, db: db)
                return LookupResult.Item(
                    transaction_id: p.transactionID, original_transaction_id: p.transactionID,
                    product_id: p.lines.map(\.productID).joined(separator: " "), environment: p.test ? "test" : "production",
                    purchase_date: p.completedAt.map(UTC.timestamp), quantity: p.units,
                    revocation_date: facts.voids.map(\.voidedAt).max().map(UTC.timestamp), verdict: v.kind.rawValue,
                    text: v.text + listed(v, seen), user_id: v.userID, order_id: v.orderID, grant_ids: v.grantIDs, owed: v.owed,
                    report: v.report?.rawValue, first_seen: seen)
            }
        }
        let lines =
            items.isEmpty
            ? [
                "the nights have no answer of Google for \(asked == "play_token" ? "purchase token" : "order") \(id): no upload of ours "
                    + "named it, or Google has not answered yet (the next night asks it); Google Play's rows must be mapped (a store column) "
                    + "and PLAY_PACKAGE_NAMES set"
            ]
            : items.map(LookupResult.line)
        return LookupResult(
            asked: asked, id: id, apple: "not_asked", source: LookupResult.fromOurData, store: "google_play",
            transactions: items, lines: lines)
    }
}
