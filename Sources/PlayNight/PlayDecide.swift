// Google Play's part of the decide stage (docs/rules.md "Google Play"): what Google said of each
// purchase token the job asked about, with the shop's Play rows, decided by the rule book
// (`PlayRules.decide`) one token at a time, a batch of tokens per round trip. Its findings join
// the App Store's in `current_findings` (keys beginning `google_play|`), acknowledge.csv's rows
// go to `play_acknowledge`. Memory holds one batch, then the compensations waiting for the order
// match (findings, not rows).

import Foundation
import JobStore
import Logging
import NightLearn
import Postgres
import Reconciliation
import Synchronization

/// Decides every Google Play purchase token of `play_purchases` and writes what the rules find.
package struct PlayDecide: Sendable {
    let settings: JobSettings
    let logger: Logger
    var S: SQL { settings.jobSchema.sql }

    /// The night's working tables it makes (dropped with the night's: NightTables).
    package static let tables = ["play_g", "play_r", "play_o", "play_p", acknowledgeTable]
    /// acknowledge.csv's rows, made (empty when nothing is decided) on every night with Play configured.
    package static let acknowledgeTable = "play_acknowledge"
    /// The beginning of a Play finding's key (`PlayRules.findingKeyPrefix`).
    package static let keyPrefix = PlayRules.findingKeyPrefix
    /// Purchase tokens gathered and decided at once, shared by the sessions deciding side by side
    /// (each takes its share a round trip): memory holds one batch whatever their number.
    package static let batch = 5000

    /// What the stage decided (the log's line).
    package struct Result: Sendable, Equatable {
        /// Purchase tokens decided.
        package var tokens = 0
        /// Rows written, per report file.
        package var rows: [String: Int] = [:]
        /// The nearest `acknowledge_by` not passed yet (acknowledge.csv's rows but `overdue`); nil: none.
        package var nextAcknowledgeBy: EpochMillis?
    }

    /// `settings` with the night's source shape (`storeRows`) known.
    package init(settings: JobSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
    }

    /// Decides and writes. Without Play's rows mapped (no `store` column) only the empty
    /// acknowledge table is made. The tokens are split into `workers` ranges of about as many
    /// purchases, each gathered and decided on a session of its own (`connect`): one worker waits
    /// for Postgres about two thirds of its time, so two keep both cores busy. Then the order match
    /// of the compensations that name no order, across every range, on `db`.
    package func run(_ db: PGConnection, workers: Int = Self.workers, connect: @Sendable () throws -> PGConnection) throws -> Result {
        try db.execute(acknowledgeTableSQL)
        guard settings.storeRows != nil else { return Result() }
        // The clean rows of the night's copies of Play's rows (NightDecide's OtherStoreRows.swift),
        // checked once; the products, a handful, from Play's rows.
        try db.execute(
            copiesSQL(clean: { relation in
                guard let copy = relation.playCopyTable else {
                    return relation.cleanRows("\(S).\(ident: relation.playRowsTable)", jobSchema: settings.jobSchema, store: .googlePlay)
                }
                return "\(S).\(ident: copy)"
            }))
        let gather = PlayGather(settings: settings, products: try products(db))
        let ranges = try tokenRanges(db, count: workers)
        let written = Mutex<Set<String>>([])
        let outcomes = Mutex<[Int: Swift.Result<Worked, any Error>]>([:])
        DispatchQueue.concurrentPerform(iterations: ranges.count) { i in
            let outcome = Swift.Result<Worked, any Error> {
                let session = try connect()
                defer { session.close() }
                return try decide(
                    session, gather, after: ranges[i].after, through: ranges[i].through, limit: max(1, Self.batch / ranges.count),
                    once: written)
            }
            outcomes.withLock { $0[i] = outcome }
        }
        var result = Result(), candidates: [CompensationCandidate] = []
        for i in ranges.indices {
            guard let outcome = outcomes.withLock({ $0[i] }) else { continue }
            let worked = try outcome.get()
            result.tokens += worked.result.tokens
            result.rows.merge(worked.result.rows, uniquingKeysWith: +)
            if let next = worked.result.nextAcknowledgeBy { result.nextAcknowledgeBy = min(result.nextAcknowledgeBy ?? next, next) }
            candidates += worked.candidates
        }
        let open = try gather.openOrders(db, of: candidates.filter { $0.exactOrder == nil })
        let matched = Decide.matchOrders(candidates, openOrders: open)
        try write(db, matched.map { (.compensate, PlayRules.compensationKey($0), $0.cells) }, into: &result, once: written)
        logger.info(
            "Google Play: \(result.tokens) purchase tokens decided: \(result.rows.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "))"
        )
        return result
    }

    /// Sessions deciding Play's tokens side by side (one per core of the machine the night was measured on).
    package static let workers = 2

    /// What one worker decided: its rows written, and the compensations waiting for the order match.
    struct Worked: Sendable {
        var result = Result()
        var candidates: [CompensationCandidate] = []
    }

    /// The tokens after `after` up to `through` (nil: the last), `limit` at a time: gathered,
    /// decided, written on `db`.
    func decide(
        _ db: PGConnection, _ gather: PlayGather, after start: String, through: String?, limit: Int,
        once written: borrowing Mutex<Set<String>>
    ) throws -> Worked {
        let rules = settings.decisionSettings
        var worked = Worked()
        var after = start
        while true {
            let facts = try gather.batch(db, after: after, through: through, limit: limit)
            guard let last = facts.last else { break }
            after = last.purchase.token
            worked.result.tokens += facts.count
            var rows: [(ReportFile, String, [String])] = []
            var acknowledge: [AcknowledgeRow] = []
            for f in facts {
                let d = PlayRules.decide(f, settings: rules)
                worked.candidates += d.compensations
                rows += d.duplicates.map { (.duplicateGrants, $0.findingKey, $0.cells) }
                rows += d.clawbacks.map { (.clawback, $0.findingKey, $0.cells) }
                rows += d.refunds.map { (.refunds, $0.findingKey, $0.cells) }
                rows += d.unattributed.map { (.unattributed, PlayRules.unattributedKey($0), $0.cells) }
                acknowledge += d.acknowledge
            }
            try write(db, rows, into: &worked.result, once: written)
            try write(db, acknowledge)
            worked.result.rows["acknowledge.csv", default: 0] += acknowledge.count
            for a in acknowledge where a.action != .overdue {
                worked.result.nextAcknowledgeBy = min(worked.result.nextAcknowledgeBy ?? a.acknowledgeBy, a.acknowledgeBy)
            }
        }
        return worked
    }

    /// `count` ranges of tokens (after, through] of about as many purchases each, in token order;
    /// fewer when there are fewer than `batch` purchases a range. The first begins after "" and
    /// the last ends with the last token (`through` nil).
    func tokenRanges(_ db: PGConnection, count: Int) throws -> [(after: String, through: String?)] {
        let n = Int(try db.query("SELECT count(*) FROM \(S).play_purchases").value(0, 0) ?? "") ?? 0
        let parts = max(1, min(count, n / Self.batch))
        var bounds: [String] = []
        for k in 1..<parts {
            let r = try db.query("SELECT token FROM \(S).play_purchases ORDER BY token OFFSET \(literal: .int(k * n / parts)) LIMIT 1")
            // Strictly increasing in the database's order (the tokens are a key): compared there, never here.
            if let token = r.value(0, 0), token != bounds.last { bounds.append(token) }
        }
        let starts = [""] + bounds
        return starts.indices.map { (starts[$0], $0 + 1 < starts.count ? starts[$0 + 1] : nil) }
    }

    var acknowledgeTableSQL: SQL {
        let t: SQL = "\(S).\(ident: Self.acknowledgeTable)"
        let cells = Self.acknowledgeCells.map { "\($0) text" as SQL }.joined()
        return """
            DROP TABLE IF EXISTS \(t);
            CREATE UNLOGGED TABLE \(t) (acknowledge_by bigint NOT NULL, transaction_id text NOT NULL, \(cells))
            WITH (autovacuum_enabled = false)
            """
    }

    /// The table's columns of acknowledge.csv's cells, `c1`….
    static var acknowledgeCells: [SQL] { (1...AcknowledgeRow.layout.count).map { "\(ident: "c\($0)")" } }

    /// acknowledge.csv's statement: most urgent first.
    package static func acknowledgeCSV(_ S: SQL) -> SQL {
        return """
            SELECT \(acknowledgeCells.joined()) FROM \(S).\(ident: acknowledgeTable)
            ORDER BY acknowledge_by, transaction_id COLLATE "C"
            """
    }

    /// The clean Play rows the rules read, from the Play views in `views`, as temporary tables of
    /// the session (`pg_temp`; `lookup`, `respond`: the job schema only read).
    package func copiesSQL(_ views: SQL, temporary: Bool) -> SQL {
        let s = settings.jobSchema
        return copiesSQL(
            clean: { $0.cleanRows("\(views).\($0.name)", jobSchema: s, store: .googlePlay) }, knownProducts: views, temporary: temporary)
    }

    /// The clean Play rows the rules read, once a night, from `clean` of each relation (a relation
    /// or a subquery: the first row of each key, without problems; input_errors.csv has the
    /// others). The night reads its copies of Play's rows, made once (the views filter whole
    /// relations).
    /// `temporary`: temporary tables of the session (`pg_temp`), the job schema only read.
    /// `knownProducts`: the views `pg_temp.play_known_products` is made from (the night made its
    /// own with its working tables).
    package func copiesSQL(clean: (SourceRelation) -> SQL, knownProducts views: SQL? = nil, temporary: Bool = false) -> SQL {
        func ms(_ column: SQL) -> SQL { SourceRelation.epochMilliseconds("x.\(column)") }
        let new: SQL = temporary ? "TEMPORARY TABLE" : "UNLOGGED TABLE"
        let options: SQL = temporary ? "" : "WITH (autovacuum_enabled = false)"
        let S: SQL = temporary ? "pg_temp" : S
        // What obfuscatedExternalAccountId names (--play-account-id), as it is or hashed: the
        // hash of each order's order id or user id, once, beside the order.
        let hashed: SQL = settings.playAccountID == .order ? "x.order_id::text" : "x.user_id::text"
        // The night made play_known_products with its working tables; lookup makes its own.
        let known: SQL =
            views.map { SourceRelation.playKnownProductsSQL(views: $0, table: "pg_temp.play_known_products", temporary: true) } ?? ""
        return """
            \(known)
            DROP TABLE IF EXISTS \(S).play_g, \(S).play_r, \(S).play_o, \(S).play_p;
            CREATE \(new) \(S).play_p \(options) AS
                SELECT x.product_id::text AS product_id, x.product_type::text AS product_type,
                       \(SourceRelation.listPriceColumns(present: settings.listPriceColumns))
                FROM \(clean(.products)) x;
            CREATE \(new) \(S).play_g \(options) AS
                SELECT x.grant_id::text AS grant_id, x.user_id::text AS user_id, x.order_id::text AS order_id,
                       x.product_id::text AS product_id, x.transaction_id::text AS transaction_id,
                       x.original_transaction_id::text AS original_transaction_id, x.quantity::int AS quantity,
                       \(ms("granted_at")) AS granted_ms, \(ms("revoked_at")) AS revoked_ms
                FROM \(clean(.grants)) x;
            CREATE \(new) \(S).play_r \(options) AS
                SELECT x.receipt_id::text AS receipt_id, x.user_id::text AS user_id, x.order_id::text AS order_id,
                       x.receipt_data::text COLLATE "default" AS token, \(ms("submitted_at")) AS submitted_ms
                FROM \(clean(.receipts)) x;
            CREATE \(new) \(S).play_o \(options) AS
                SELECT x.order_id::text AS order_id, x.user_id::text AS user_id, x.product_id::text AS product_id,
                       x.quantity::int AS quantity, x.status::text AS status, x.transaction_id::text AS transaction_id,
                       \(ms("created_at")) AS created_ms, encode(sha256(convert_to(\(hashed), 'UTF8')), 'hex') AS account_hash
                FROM \(clean(.orders)) x;
            CREATE INDEX ON \(S).play_g (transaction_id);
            CREATE INDEX ON \(S).play_r (token);
            CREATE INDEX ON \(S).play_o (transaction_id);
            CREATE INDEX ON \(S).play_o (order_id);
            CREATE INDEX ON \(S).play_o (user_id, product_id);
            CREATE INDEX ON \(S).play_o (account_hash);
            SET default_statistics_target = 10;
            ANALYZE \(S).play_g; ANALYZE \(S).play_r; ANALYZE \(S).play_o; ANALYZE \(S).play_p;
            RESET default_statistics_target
            """
    }

    /// Play's valid products, by id (a handful of rows), from `play_p` in `rows` (default: the job schema).
    package func products(_ db: PGConnection, rows: SQL? = nil) throws -> [String: PlayProduct] {
        var out: [String: PlayProduct] = [:]
        for row in try db.query("SELECT product_id, product_type, list_milli, list_currency FROM \(rows ?? S).play_p").rows {
            guard let id = row[0], let type = row[1].flatMap(ProductType.init(rawValue:)) else { continue }
            let list = row[2].flatMap { Int64($0) }.flatMap { m in row[3].map { Money(milliunits: m, currency: $0) } }
            out[id] = PlayProduct(type, listUnit: list)
        }
        return out
    }

    /// Findings into `current_findings`, each key after `keyPrefix`, cells padded to the table's
    /// width. A key already written tonight, by any worker, is written once (`once`): two tokens
    /// Google gave one order id would name the same grants twice, and the history takes a key once.
    func write(
        _ db: PGConnection, _ rows: [(ReportFile, String, [String])], into result: inout Result,
        once written: borrowing Mutex<Set<String>>
    ) throws {
        let rows = written.withLock { written in rows.filter { written.insert($0.1).inserted } }
        guard !rows.isEmpty else { return }
        let width = ReportFile.findingsCells
        try db.copyIn("COPY \(S).current_findings FROM STDIN") { w in
            for (file, key, cells) in rows {
                var row: [String?] = [file.rawValue, Self.keyPrefix + key]
                row += cells.map { Optional($0) }
                while row.count < 2 + width { row.append(nil) }
                try w.row(row)
            }
        }
        for (file, _, _) in rows { result.rows[file.rawValue, default: 0] += 1 }
    }

    /// acknowledge.csv's rows into `play_acknowledge`.
    func write(_ db: PGConnection, _ rows: [AcknowledgeRow]) throws {
        guard !rows.isEmpty else { return }
        try db.copyIn("COPY \(S).\(ident: Self.acknowledgeTable) FROM STDIN") { w in
            for r in rows { try w.row([String(r.acknowledgeBy), r.transactionID] + r.cells.map { Optional($0) }) }
        }
    }
}
