// The facts of a batch of Play purchase tokens (`PlayFacts`), gathered from what Google said
// (`play_purchases`, `play_purchase_lines`, `play_voided`, `play_orders`) and the shop's clean Play
// rows (`play_g`, `play_r`, `play_o`: PlayDecide.copiesSQL), one statement per kind of fact.

import JobStore
import NightLearn
import Postgres
import Reconciliation

/// Gathers Play purchase tokens' facts, a batch (or the tokens asked) at a time.
package struct PlayGather {
    let settings: JobSettings
    let products: [String: PlayProduct]
    /// Where the clean Play rows are (`PlayDecide.copiesSQL`): the job schema, or `pg_temp` for `lookup`.
    let rows: SQL
    var S: SQL { settings.jobSchema.sql }

    /// Gathers over the clean Play rows made in `rows` (the job schema by default).
    package init(settings: JobSettings, products: [String: PlayProduct], rows: SQL? = nil) {
        self.settings = settings
        self.products = products
        self.rows = rows ?? settings.jobSchema.sql
    }

    /// The next tokens after `after` (up to `through`, when given), in token order, with all their
    /// facts; empty at the end. `limit`: the batch's size (the night's `PlayDecide.batch`; a test
    /// takes a few, to cross many ranges).
    package func batch(_ db: PGConnection, after: String, through: String? = nil, limit: Int = PlayDecide.batch) throws -> [PlayFacts] {
        let upTo: SQL = through.map { " AND token <= \($0)" } ?? ""
        let r = try db.query(
            """
            SELECT token, package, verdict, order_id, acknowledgement,
                   \(SourceRelation.epochMilliseconds("completed_at")), test, account_id
            FROM \(S).play_purchases WHERE token > \(after)\(upTo) ORDER BY token LIMIT \(literal: .int(limit))
            """)
        guard r.rowCount > 0, let last = r.value(r.rowCount - 1, 0) else { return [] }
        return try facts(db, r, of: .range(after: after, last: last))
    }

    /// The facts of the purchases Google answered for among `tokens`.
    package func facts(_ db: PGConnection, tokens: [String]) throws -> [PlayFacts] {
        let r = try db.query(
            """
            SELECT token, package, verdict, order_id, acknowledgement,
                   \(SourceRelation.epochMilliseconds("completed_at")), test, account_id
            FROM \(S).play_purchases WHERE token = ANY(\(tokens)::text[]) ORDER BY token
            """)
        return try facts(db, r, of: .tokens(tokens))
    }

    /// Which tokens a gathering is of: a batch's range of tokens (every token after `after` up to
    /// `last`, in the order of `batch`), read by range from the tables keyed by token, or tokens
    /// named one by one.
    enum Tokens {
        case range(after: String, last: String)
        case tokens([String])

        /// The row `x`'s `token` is one of these tokens. A range takes only tokens of a purchase
        /// (`purchases`): an upload or a voided record of a token never asked stays in the database,
        /// so a batch's rows are bounded by its purchases, not by the shop's history.
        func predicate(purchases: SQL) -> SQL {
            switch self {
            case .range(let after, let last):
                return
                    "x.token > \(after) AND x.token <= \(last) "
                    + "AND EXISTS (SELECT 1 FROM \(purchases) p WHERE p.token = x.token)"
            case .tokens(let tokens): return "x.token = ANY(\(tokens)::text[])"
            }
        }
    }

    /// The purchases of `r` (`play_purchases`' columns, as `batch` selects them) with all their facts.
    private func facts(_ db: PGConnection, _ r: PGResult, of tokens: Tokens) throws -> [PlayFacts] {
        var facts: [PlayFacts] = []
        var accounts: [String: String] = [:]
        for row in r.eachRow {
            guard let token = row[0], let package = row[1],
                let verdict = row[2].flatMap(GooglePurchase.Verdict.init(rawValue:))
            else { continue }
            let purchase = GooglePurchase(
                token: token, package: package, verdict: verdict, orderID: row[3],
                acknowledged: row[4] == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED", completedAt: row[5].flatMap { Int64($0) },
                test: row[6] == "t")
            facts.append(PlayFacts(purchase: purchase, products: products))
            if let account = row[7] { accounts[token] = account }
        }
        guard !facts.isEmpty else { return [] }
        try addLines(db, &facts, tokens)
        try addVoids(db, &facts, tokens)
        try addOrderMoney(db, &facts)
        try addShopRows(db, &facts, tokens, accounts: accounts)
        return facts
    }

    /// Each token's place in `facts` (the first, were one there twice), read in place: a copy of
    /// each purchase's facts per lookup table was a tenth of the step.
    private func index(_ facts: [PlayFacts]) -> [String: Int] {
        var at: [String: Int] = [:]
        at.reserveCapacity(facts.count)
        for i in facts.indices where at[facts[i].purchase.token] == nil { at[facts[i].purchase.token] = i }
        return at
    }

    private func addLines(_ db: PGConnection, _ facts: inout [PlayFacts], _ tokens: Tokens) throws {
        let at = index(facts)
        let r = try db.query(
            """
            SELECT x.token, x.product_id, x.quantity, x.consumption_state FROM \(S).play_purchase_lines x
            WHERE \(tokens.predicate(purchases: "\(S).play_purchases")) ORDER BY x.token, x.line
            """)
        for row in r.eachRow {
            guard let i = row[0].flatMap({ at[$0] }), let product = row[1], let quantity = row[2].flatMap({ Int($0) })
            else { continue }
            facts[i].purchase.lines.append(
                GooglePurchase.Line(productID: product, quantity: quantity, consumptionState: row[3]))
        }
    }

    private func addVoids(_ db: PGConnection, _ facts: inout [PlayFacts], _ tokens: Tokens) throws {
        let at = index(facts)
        let r = try db.query(
            """
            SELECT x.token, x.voided_ms, x.voided_quantity, x.source, x.reason FROM \(S).play_voided x
            WHERE \(tokens.predicate(purchases: "\(S).play_purchases"))
            """)
        for row in r.eachRow {
            guard let i = row[0].flatMap({ at[$0] }), let at = row[1].flatMap({ Int64($0) }),
                let q = row[2].flatMap({ Int($0) })
            else { continue }
            facts[i].voids.append(
                PlayVoid(
                    voidedAt: at, quantity: q == 0 ? nil : q, source: row[3].flatMap { Int($0) } ?? 0,
                    reason: row[4].flatMap { Int($0) } ?? 0))
        }
    }

    private func addOrderMoney(_ db: PGConnection, _ facts: inout [PlayFacts]) throws {
        let orders = facts.compactMap(\.purchase.orderID)
        guard !orders.isEmpty else { return }
        var byOrder: [String: Int] = [:]
        for i in facts.indices { if let o = facts[i].purchase.orderID { byOrder[o] = i } }
        let r = try db.query(
            """
            SELECT order_id, state, total_currency, total_units, total_nanos, \(SourceRelation.epochMilliseconds("asked_at"))
            FROM \(S).play_orders
            WHERE order_id = ANY(\(orders)::text[]) AND NOT unknown
            """)
        for row in r.eachRow {
            guard let i = row[0].flatMap({ byOrder[$0] }) else { continue }
            var money: Money?
            if let currency = row[2], let units = row[3].flatMap({ Int64($0) }),
                let nanos = row[4].flatMap({ Int32($0) }),
                let milli = PlayOrderFacts.milliunits(units: units, nanos: nanos)
            {
                money = Money(milliunits: milli, currency: currency)
            }
            facts[i].order = PlayOrderFacts(state: row[1], total: money, askedAt: row[5].flatMap { Int64($0) })
        }
    }

    /// The grants of each purchase's transaction id, its earliest upload, its orders, and whose it is.
    private func addShopRows(
        _ db: PGConnection, _ facts: inout [PlayFacts], _ tokens: Tokens, accounts: [String: String]
    ) throws {
        // A grant or order names the purchase by its order id, or by its token: the contract asks
        // for the order id when there is one, and a mapping that keeps the token instead must not
        // make every purchase look unpaid.
        var byTransaction: [String: Int] = [:]
        for i in facts.indices {
            byTransaction[facts[i].purchase.token] = i
            byTransaction[facts[i].purchase.transactionID] = i
        }
        let g = try db.query(
            """
            SELECT grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_ms, revoked_ms
            FROM \(rows).play_g WHERE transaction_id = ANY(\(Array(byTransaction.keys))::text[])
            ORDER BY granted_ms, grant_id COLLATE "C"
            """)
        for row in g.eachRow {
            guard let id = row[0], let user = row[1], let product = row[3], let tid = row[4],
                let i = byTransaction[tid],
                let quantity = row[6].flatMap({ Int($0) }), let granted = row[7].flatMap({ Int64($0) })
            else { continue }
            facts[i].grants.append(
                Grant(
                    grantID: id, userID: user, orderID: row[2], productID: product, transactionID: tid,
                    originalTransactionID: row[5], quantity: quantity, grantedAt: granted,
                    revokedAt: row[8].flatMap { Int64($0) }))
        }
        let at = index(facts)
        let u = try db.query(
            """
            SELECT DISTINCT ON (x.token) x.token, x.receipt_id, x.user_id, x.order_id FROM \(rows).play_r x
            WHERE \(tokens.predicate(purchases: "\(S).play_purchases"))
            ORDER BY x.token, x.submitted_ms, x.receipt_id COLLATE "C"
            """)
        var uploadOrder: [Int: String] = [:], uploader: [Int: String] = [:]
        for row in u.eachRow {
            guard let i = row[0].flatMap({ at[$0] }) else { continue }
            facts[i].receiptID = row[1]
            uploader[i] = row[2]
            uploadOrder[i] = row[3]
        }
        // obfuscatedExternalAccountId names an order (or a user: --play-account-id), as it is or
        // as the lowercase hex SHA-256 of it.
        let byOrder = settings.playAccountID == .order
        let named = Array(Set(byOrder ? Array(accounts.values) : []).union(uploadOrder.values))
        let hashes = Array(Set(accounts.values.filter { $0.utf8.count == 64 }))
        let users = byOrder ? [] : Array(Set(accounts.values))
        let o = try db.query(
            """
            SELECT order_id, user_id, product_id, created_ms, transaction_id, account_hash FROM \(rows).play_o
            WHERE transaction_id = ANY(\(Array(byTransaction.keys))::text[]) OR order_id = ANY(\(named)::text[])
               OR account_hash = ANY(\(hashes)::text[]) OR user_id = ANY(\(users)::text[])
            ORDER BY created_ms, order_id COLLATE "C"
            """)
        var ofTransaction: [Int: OrderRef] = [:], byID: [String: OrderRef] = [:]
        /// What an account names: the order (by id or hash), or the user (by id or hash) of an order.
        var byAccount: [String: OrderRef] = [:], userOf: [String: String] = [:]
        for row in o.eachRow {
            guard let id = row[0], let user = row[1], let product = row[2], let created = row[3].flatMap({ Int64($0) })
            else { continue }
            let ref = OrderRef(orderID: id, userID: user, productID: product, createdAt: created)
            if let tid = row[4], let i = byTransaction[tid], ofTransaction[i] == nil { ofTransaction[i] = ref }
            byID[id] = ref
            if byOrder {
                if byAccount[id] == nil { byAccount[id] = ref }
                if let hash = row[5], byAccount[hash] == nil { byAccount[hash] = ref }
            } else {
                userOf[user] = user
                if let hash = row[5] { userOf[hash] = user }
            }
        }
        for i in facts.indices {
            let purchase = facts[i].purchase
            let account = byOrder ? accounts[purchase.token].flatMap { byAccount[$0] } : nil
            let accountUser = byOrder ? account?.userID : accounts[purchase.token].flatMap { userOf[$0] }
            let uploaded = uploadOrder[i].flatMap { byID[$0] }.flatMap { o in
                purchase.lines.contains { $0.productID == o.productID } ? o : nil
            }
            facts[i].exactOrder = ofTransaction[i] ?? account ?? uploaded
            facts[i].userID = PlayOwner.of(
                uploader: uploader[i], accountUser: accountUser,
                earliestGrantUser: facts[i].grants.first?.userID)
        }
    }

    /// The open Play orders of the users and products of `candidates` (the inferred order match's pool).
    package func openOrders(_ db: PGConnection, of candidates: [CompensationCandidate]) throws -> [Order] {
        guard !candidates.isEmpty else { return [] }
        let r = try db.query(
            """
            SELECT order_id, user_id, product_id, quantity, status, transaction_id, created_ms FROM \(rows).play_o
            WHERE (user_id, product_id) IN (SELECT * FROM unnest(\(candidates.map(\.userID))::text[],
                                                                 \(candidates.map(\.transaction.productID))::text[]))
            """)
        return r.rows.compactMap { row in
            guard let id = row[0], let user = row[1], let product = row[2], let created = row[6].flatMap({ Int64($0) })
            else { return nil }
            return Order(
                orderID: id, userID: user, productID: product, quantity: row[3].flatMap { Int($0) } ?? 1,
                status: row[4] ?? "", transactionID: row[5], createdAt: created)
        }
    }
}
