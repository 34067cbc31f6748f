import JobStore
import NightLearn
import Postgres
import Reconciliation

// The inferred order match (contract §4) with memory flat in findings: compensation candidates
// are spooled to `{S}.compensation_spool` on their own connection as the families stream by,
// then read back beside the open orders of the same users and products, sorted by user and
// product, and matched one group at a time (`Decide.inferOrders`). Candidates with an exact order
// are written at once; only their order ids are spooled, so that inference never takes them.

/// Spools compensation candidates (one COPY per 2,000, committed as it goes: the table is the
/// run's scratch, emptied when a run starts it, so a run killed meanwhile leaves nothing that
/// counts). Used by one thread at a time: the decide stage's, or its FindingWriter's while that
/// one runs.
final class CompensationSpool: @unchecked Sendable {
    private let db: PGConnection
    private let schema: JobSchema
    private var pending: [[String?]] = []
    static let cells = FindingSink.maxCells

    init(settings: JobSettings) throws {
        schema = settings.jobSchema
        db = try JobDatabase.connect(settings)
        try db.execute("TRUNCATE \(schema.sql).compensation_spool")  // made by migration 10
    }

    /// A candidate with an exact order: its row goes to the sink now; its order is kept out of inference.
    func exact(orderID: String) throws { try add(["E", nil, nil, nil, nil, nil, orderID]) }

    /// A candidate to match later: the row as `none` would write it, to be given its order.
    func candidate(_ c: CompensationCandidate, row: CompensationRow) throws {
        let t = c.transaction
        try add(
            ["C", c.userID, t.productID, String(t.purchaseDate), t.transactionID, t.environment.rawValue, nil]
                + row.cells.map { Optional($0) })
    }

    private func add(_ row: [String?]) throws {
        var row = row
        while row.count < 7 + Self.cells { row.append(nil) }
        pending.append(row)
        if pending.count >= 2000 { try flush() }
    }

    func flush() throws {
        guard !pending.isEmpty else { return }
        let rows = pending
        pending.removeAll(keepingCapacity: true)
        try db.copyIn("COPY \(schema.sql).compensation_spool FROM STDIN") { w in for row in rows { try w.row(row) } }
    }

    func close() { db.close() }
}

extension DecideStage {
    /// Where compensate.csv's `order_id` and `match` stand among its cells.
    static let orderCell = ReportFile.compensate.layout.cellIndex("order_id")!
    static let matchCell = ReportFile.compensate.layout.cellIndex("match")!

    /// Reads the spooled candidates with the open orders of their users and products, one
    /// (user, product) group after the other, and hands each candidate's row, with its order
    /// match, to `emit`. Open orders an exact match took are left out, as the rule says.
    func matchSpooledCandidates(_ db: PGConnection, emit: (String, [String]) throws -> Void) throws {
        let cells = (1...CompensationSpool.cells).map { "c\($0)" }
        let nulls = cells.map { _ in "NULL::text" as SQL }.joined(separator: ", ")
        var group: (user: String, product: String)?
        var orders: [Order] = []
        var purchases: [(ms: EpochMillis, key: String, cells: [String])] = []
        func finish() throws {
            guard let g = group, !purchases.isEmpty else { return }
            let matched = Decide.inferOrders(
                userID: g.user, productID: g.product, purchases: purchases.map(\.ms),
                openOrders: orders)
            for (p, order) in zip(purchases, matched) {
                var row = p.cells
                row[Self.orderCell] = order?.orderID ?? ""
                row[Self.matchCell] = (order == nil ? OrderMatch.none : OrderMatch.inferred).rawValue
                try emit(p.key, row)
            }
        }
        // Fresh statistics, so the planner hashes the spool for the two (anti-)joins instead of
        // scanning it once per open order.
        try db.execute("ANALYZE \(S).compensation_spool")
        try db.copyOut(
            """
            COPY (SELECT * FROM (
            SELECT 'C' AS kind, s.user_id, s.product_id, s.purchase_ms AS at, s.transaction_id AS id, s.environment,
                   \(cells.map { "s.\(ident: $0)" as SQL }.joined(separator: ", "))
            FROM \(S).compensation_spool s WHERE s.kind = 'C'
            UNION ALL
            SELECT 'O', o.user_id, o.product_id, o.created_ms, o.order_id, o.quantity::text, \(nulls)
            FROM o
            WHERE o.transaction_id IS NULL AND o.status <> 'delivered'
              AND EXISTS (SELECT 1 FROM \(S).compensation_spool s
                          WHERE s.kind = 'C' AND s.user_id = o.user_id AND s.product_id = o.product_id)
              AND NOT EXISTS (SELECT 1 FROM \(S).compensation_spool s WHERE s.kind = 'E' AND s.exact_order_id = o.order_id)
            ) x ORDER BY user_id COLLATE "C", product_id COLLATE "C", kind DESC, at, id COLLATE "C", environment COLLATE "C"
            ) TO STDOUT
            """
        ) { line in
            let f = CopyText.fields(line)
            guard f.count == 6 + cells.count, let user = f[1], let product = f[2], let at = f[3].flatMap({ Int64($0) }),
                let id = f[4]
            else { return }
            if group?.user != user || group?.product != product {
                try finish()
                group = (user, product)
                orders.removeAll(keepingCapacity: true)
                purchases.removeAll(keepingCapacity: true)
            }
            if f[0] == "O" {
                orders.append(
                    Order(
                        orderID: id, userID: user, productID: product, quantity: Int(f[5] ?? "1") ?? 1,
                        status: "open", transactionID: nil, createdAt: at))
            } else {
                purchases.append((at, "compensate|\(id)|\(f[5] ?? "")", f[6...].map { $0 ?? "" }))
            }
        }
        try finish()
    }
}
