import AppStoreSimulator
import Foundation
@testable import JobStore
import Logging
@testable import NightDecide
@testable import NightLearn
import Postgres
import Reconciliation
import RuleOracles
import SimulatorData
import Testing

/// Issue "One rule book": the decisions live in `Reconciliation`; where the night's SQL decides
/// or pre-filters for speed, it must decide exactly what the core decides. Each test runs a
/// generated night (every scenario of the generator: `iap-sim seed` guarantees each once at 300
/// users, and the census is checked), remakes the night's working tables with the night's own
/// statements, gathers the facts independently, and compares the SQL's answer with the core's.
@Suite("The rule book: the night's SQL decides what the core decides", .serialized, .enabled(if: Harness.hasDatabase))
struct RuleBookTests {
    struct Night {
        let w: ServerAPINightTests.World
        let settings: JobSettings
        var db: PGConnection { w.t.db }

        /// The decide stage over the job schema, its working tables made by its own statements.
        func stage(asOf: EpochMillis? = nil) throws -> (DecideStage, ProductCatalog) {
            var s = settings
            if let asOf { s.asOf = asOf }
            let stage = DecideStage(settings: s, runID: 0, logger: Logger(label: "rule-book-test"))
            try NightTables.create(db, schema: s.jobSchema)
            let products = try stage.prepareInOrder(db, sources: { "public.\($0.name)" })
            try db.execute(stage.crowdedKeysSQL(transactionIndexed: false))
            return (stage, products)
        }
    }

    static func night(_ label: String) throws -> Night {
        let w = try ServerAPINightTests.world(label, share: "0.25")
        let ran = try w.night()
        #expect(ran.status == 0, "\(ran.stderr)")
        // Every scenario the generator has is in the data (its census line), so the properties
        // below cover each.
        let census = w.seeded.components(separatedBy: "scenarios: ").last ?? ""
        let seen = Set(census.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { $0.split(separator: "=").first.map(String.init) })
        let missing = Scenario.allCases.filter { $0 != .apiBench && !seen.contains($0.rawValue) }
        #expect(missing.isEmpty, "scenarios missing from the generated night: \(missing)")
        var settings = JobSettings(asOf: try #require(UTC.parse(NightTests.asOf)), jobSchema: try JobSchema("recon"))
        settings.databaseURL = "dbname=\(w.t.name)"
        return Night(w: w, settings: settings)
    }

    // MARK: Quiet families

    /// The families the SQL calls quiet: left out of the family queries (`crowded_keys`), or sent
    /// with their only two rows flagged (`FamilyStream.isQuiet`).
    static func sqlQuietKeys(_ n: Night, _ stage: DecideStage) throws -> Set<String> {
        struct Counts { var flaggedT = 0, flaggedG = 0, t = 0, g = 0 }
        var counts: [String: Counts] = [:]
        var sentTransactions = Set<String>(), sentGrants = Set<String>()
        for (sql, isT) in [(stage.transactionRowsSQL, true), (stage.grantRowsSQL, false)] {
            try n.db.copyOut("COPY (\(sql)) TO STDOUT") { line in
                guard let row = FamilyRow(line), let key = row.key, let id = row.fields[2] else { return }
                let flagged = FamilyRow.quietFlag(line)
                if isT {
                    sentTransactions.insert(id + "|" + (row[TransactionColumn.environment] ?? ""))
                    if flagged { counts[key, default: Counts()].flaggedT += 1 } else { counts[key, default: Counts()].t += 1 }
                } else {
                    sentGrants.insert(id)
                    if flagged { counts[key, default: Counts()].flaggedG += 1 } else { counts[key, default: Counts()].g += 1 }
                }
            }
        }
        var quiet = Set(counts.filter {
            FamilyStream.isQuiet(unreadTransactions: $0.value.flaggedT, unreadGrants: $0.value.flaggedG,
                                 transactions: $0.value.t, grants: $0.value.g)
        }.keys)
        // Left out: a family of one transaction (its key its id) and one grant.
        let all = try n.db.query("SELECT transaction_id, environment, original_transaction_id FROM recon.apple_transactions")
        let leftOut = all.rows.filter { !sentTransactions.contains($0[0]! + "|" + $0[1]!) }.map { $0[2]! }
        let grants = try n.db.query("SELECT grant_id FROM g").rows.compactMap { $0[0] }.filter { !sentGrants.contains($0) }
        #expect(leftOut.count == grants.count, "left out \(leftOut.count) transactions but \(grants.count) grants")
        quiet.formUnion(leftOut)
        return quiet
    }

    /// The quiet families the SQL skips, on which `rules` find something: none may exist.
    static func violations(_ sqlQuiet: Set<String>, _ families: [String: Family],
                           rules: (Family) -> FamilyDecision) -> [String] {
        sqlQuiet.sorted().filter { key in
            guard let family = families[key] else { return true }
            let d = rules(family)
            return !(d.compensations.isEmpty && d.duplicates.isEmpty && d.clawbacks.isEmpty && d.unattributed.isEmpty)
        }
    }

    @Test("quiet families: the SQL's predicate is the core's, the rules find nothing on them, and a rule that would is caught")
    func quietFamilies() throws {
        let n = try Self.night("rule_quiet")
        defer { n.w.stop() }
        let (stage, products) = try n.stage()
        let sqlQuiet = try Self.sqlQuietKeys(n, stage)
        // The same families whole, none left out, as the core sees them.
        try n.db.execute(stage.everyKeyCrowdedSQL)
        let families = try stage.allFamilies(n.db, products: products)
        let coreQuiet = Set(families.filter { Decide.isQuiet($0.value) }.keys)
        #expect(coreQuiet.count >= 100, "only \(coreQuiet.count) quiet families of \(families.count)")
        #expect(sqlQuiet == coreQuiet, """
            SQL only: \(sqlQuiet.subtracting(coreQuiet).sorted().prefix(5)); core only: \(coreQuiet.subtracting(sqlQuiet).sorted().prefix(5))
            """)
        let settings = n.settings.decisionSettings
        let found = Self.violations(sqlQuiet, families) { Decide.family($0, settings: settings) }
        #expect(found.isEmpty, "the rules find something on families the SQL skips: \(found.prefix(5))")
        // A rule added without its SQL pre-filter: every consumable grant counted twice. The
        // property must catch it (the SQL would skip the families it fires on).
        let testOnlyRule: (Family) -> FamilyDecision = { family in
            var d = Decide.family(family, settings: settings)
            for g in family.grants where g.productType == .consumable && g.grant.isActive {
                d.duplicates.append(DuplicateGrantRow(
                    grantID: g.grant.grantID, userID: g.grant.userID, orderID: g.grant.orderID, productID: g.grant.productID,
                    productType: .consumable, transactionID: g.grant.transactionID,
                    originalTransactionID: g.grant.originalTransactionID, kind: .sameTransaction,
                    keptGrantID: g.grant.grantID, grantedAt: g.grant.grantedAt))
            }
            return d
        }
        #expect(!Self.violations(sqlQuiet, families, rules: testOnlyRule).isEmpty,
                "a rule firing on quiet families went unnoticed")
    }

    // MARK: Whose purchase, reversal

    @Test("whose purchase: `who` and the first receipt's uploader equal Owner.of over the facts (the data holds reversals)")
    func ownerAndReversal() throws {
        let n = try Self.night("rule_owner")
        defer { n.w.stop() }
        // Histories that compete with tokens and families: half of the transactions learned from
        // the Server API alone (every one with a token) get a history user of their own.
        try n.db.execute("""
            UPDATE recon.apple_transactions SET history_user_id = 'U_history_' || transaction_id
            WHERE source IN ('notification', 'transaction_history') AND (app_account_token IS NOT NULL OR md5(transaction_id) < '8')
            """)
        let (stage, products) = try n.stage()
        // Claims on each family: uploads (clean receipts) and grants naming a transaction id of it.
        let claimRows = try n.db.query("""
            WITH ids AS (SELECT original_transaction_id AS okey, transaction_id AS tid FROM recon.apple_transactions
                         UNION SELECT original_transaction_id, original_transaction_id FROM recon.apple_transactions)
            SELECT ids.okey, r.user_id, 't', r.submitted_ms::text, r.receipt_id FROM ids JOIN r ON r.transaction_id = ids.tid
            UNION ALL
            SELECT ids.okey, g.user_id, 'f', g.granted_ms::text, g.grant_id FROM ids JOIN g
                ON g.transaction_id = ids.tid OR g.original_transaction_id = ids.tid
            """)
        var claims: [String: [Owner.Claim]] = [:]
        for row in claimRows.rows {
            claims[row[0]!, default: []].append(Owner.Claim(userID: row[1]!, isUpload: row[2] == "t", at: Int64(row[3]!)!, id: row[4]!))
        }
        // Token orders: the orders whose token each transaction carries, earliest first.
        let tokenRows = try n.db.query("""
            SELECT t.transaction_id, t.environment, o.user_id FROM recon.apple_transactions t
            JOIN token_orders tk ON tk.token = lower(t.app_account_token) JOIN o ON o.order_id = tk.order_id
            ORDER BY o.created_ms DESC, o.order_id COLLATE "C" DESC
            """)
        var tokenUser: [String: String] = [:]
        for row in tokenRows.rows { tokenUser[row[0]! + "|" + row[1]!] = row[2]! }  // the earliest comes last
        let facts = try n.db.query("""
            SELECT t.transaction_id, t.environment, t.original_transaction_id, t.history_user_id, t.source,
                   w.user_id, w.transaction_id IS NOT NULL,
                   t.cancellation_date_ms::text, t.revocation_date_ms::text, t.reversed_date_ms::text, t.revocation_type
            FROM recon.apple_transactions t LEFT JOIN who w ON w.transaction_id = t.transaction_id AND w.environment = t.environment
            """)
        var attributed = 0, reversed = 0
        for row in facts.rows {
            let key = row[0]! + "|" + row[1]!
            if row[6] == "t" {
                attributed += 1
                let core = Owner.of(receiptUploader: nil, tokenOrderUser: tokenUser[key], historyUser: row[3],
                                    familyUser: Owner.familyUser(claims[row[2]!] ?? []))
                #expect(row[5] == core, "who says \(row[5] ?? "nobody") for \(key) (\(row[4]!)), the core \(core ?? "nobody")")
            }
            let r = Revocation(cancellationDate: row[7].flatMap { Int64($0) }, revocationDate: row[8].flatMap { Int64($0) },
                               revocationType: row[10], reversedDate: row[9].flatMap { Int64($0) })
            if r.isReversed { reversed += 1 }
        }
        #expect(attributed >= 10 && reversed >= 1, "attributed \(attributed), reversed \(reversed): the data misses the cases")

        // The `T` rows' user where they look it up: the first receipt's uploader, else `who`'s.
        let firstUploader = try n.db.query("""
            SELECT DISTINCT ON (rt.transaction_id, rt.environment) rt.transaction_id || '|' || rt.environment, r.user_id
            FROM recon.receipt_transactions rt JOIN r ON r.receipt_id = rt.receipt_id
            ORDER BY rt.transaction_id, rt.environment, r.submitted_ms, r.receipt_id COLLATE "C"
            """).rows.reduce(into: [String: String]()) { $0[$1[0]!] = $1[1]! }
        let who = facts.rows.reduce(into: [String: String]()) { if let u = $1[5] { $0[$1[0]! + "|" + $1[1]!] = u } }
        try n.db.execute(stage.everyKeyCrowdedSQL)
        var checked = 0
        for family in try stage.allFamilies(n.db, products: products).values {
            for known in family.transactions where known.receiptID != nil {
                let key = known.transaction.transactionID + "|" + known.transaction.environment.rawValue
                let core = Owner.of(receiptUploader: firstUploader[key], tokenOrderUser: nil, historyUser: nil, familyUser: who[key])
                #expect(known.userID == core, "\(key): the T row says \(known.userID ?? "nobody"), the core \(core ?? "nobody")")
                checked += 1
            }
        }
        #expect(checked >= 20, "only \(checked) transactions with a receipt")
    }

    // MARK: refunds.csv and the refund window

    @Test("refunds.csv: which refunds it lists (the refund window) and their state are what Refunds.isListed and Refunds.state say of every learned transaction, gathered apart")
    func refunds() throws {
        let n = try Self.night("rule_refunds")
        defer { n.w.stop() }
        // The night's refunds.csv first, then again after the shop took back every grant of some
        // refunded purchases and lost the grants of others, so that every state is met.
        let night = LookupAgreesTests.report(n.w.out.appendingPathComponent("2026-11-21"), "refunds.csv")
            .reduce(into: [String: String]()) { $0[$1["transaction_id"]!] = $1["state"]! }
        var checked: Set<String> = []
        func compare(_ sql: [String: String]) throws {
            _ = try n.stage()
            let rows = try n.db.query("""
                SELECT t.transaction_id, t.environment, t.cancellation_date_ms::text, t.revocation_date_ms::text,
                       t.reversed_date_ms::text, t.revocation_type,
                       (SELECT count(*) FROM g WHERE g.transaction_id = t.transaction_id)::text,
                       (SELECT count(*) FROM g WHERE g.transaction_id = t.transaction_id AND g.revoked_ms IS NULL)::text
                FROM recon.apple_transactions t
                """)
            var core: [String: String] = [:]
            for row in rows.rows {
                let r = Revocation(cancellationDate: row[2].flatMap { Int64($0) }, revocationDate: row[3].flatMap { Int64($0) },
                                   revocationType: row[5], reversedDate: row[4].flatMap { Int64($0) })
                guard let env = AppStoreEnvironment(rawValue: row[1]!),
                      Refunds.isListed(r, environment: env, settings: n.settings.decisionSettings) else { continue }
                core[row[0]!] = Refunds.state(r, grants: Int(row[6]!)!, activeGrants: Int(row[7]!)!).rawValue
            }
            let differ = Set(sql.map { "\($0)=\($1)" }).symmetricDifference(core.map { "\($0)=\($1)" }).sorted()
            #expect(sql == core, "SQL \(sql.count) rows, the core \(core.count); differ: \(differ.prefix(6))")
            checked.formUnion(core.values)
        }
        try compare(night)
        let stillGranted = night.filter { $0.value == "still_granted" }.keys.sorted()
        #expect(stillGranted.count >= 4, "\(night)")
        try n.db.query("UPDATE iap_grants SET revoked_at = now() WHERE transaction_id = ANY(\(Array(stillGranted.prefix(2)))::text[])")
        try n.db.query("DELETE FROM iap_grants WHERE transaction_id = ANY(\(Array(stillGranted.dropFirst(2).prefix(2)))::text[])")
        // The night's rows on the changed data (the facts it gathers, the rules deciding), written nowhere.
        let (stage, _) = try n.stage()
        var tonight: [String: String] = [:]
        try n.db.transaction {
            try stage.refundRows(n.db) { rows in
                for row in rows {
                    #expect(row.key == "refund|" + (row.cells[0] ?? ""))
                    tonight[row.cells[0] ?? ""] = row.cells[12] ?? ""
                }
            }
        }
        try compare(tonight)
        #expect(checked == Set(Refunds.State.allCases.map(\.rawValue)), "states seen: \(checked)")
    }

    // MARK: closed.csv

    @Test("closed_because: the night's facts give every finding the reason Closing.reason gives over facts gathered apart, as of tonight and later nights, after grants change")
    func closedBecause() throws {
        let n = try Self.night("rule_closed")
        defer { n.w.stop() }
        let findings = try n.db.query("SELECT finding_key, report FROM recon.findings").rows.map { ($0[0]!, $0[1]!) }
        #expect(findings.count >= 50)
        // Change the data as a shop would between nights: deliver some missed orders, take back
        // some grants, and Apple reverses a refund that was clawed back.
        try n.db.execute("""
            INSERT INTO iap_grants (grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, granted_at)
            SELECT 'GX' || t.transaction_id, 'U_late', NULL, t.product_id, t.transaction_id, t.original_transaction_id, 1, now()
            FROM recon.apple_transactions t
            WHERE t.transaction_id IN (SELECT split_part(finding_key, '|', 2) FROM recon.findings
                                       WHERE report IN ('compensate.csv', 'unattributed.csv') ORDER BY md5(finding_key) LIMIT 8)
              AND t.environment = 'production';
            UPDATE iap_grants SET revoked_at = now() WHERE grant_id IN (
                SELECT split_part(finding_key, '|', 2) FROM recon.findings
                WHERE report IN ('duplicate_grants.csv', 'clawback.csv') ORDER BY md5(finding_key) LIMIT 8);
            UPDATE recon.apple_transactions t SET reversed_date_ms = coalesce(t.cancellation_date_ms, t.revocation_date_ms) + 1
            WHERE t.transaction_id IN (
                SELECT g.transaction_id FROM iap_grants g JOIN recon.findings f ON split_part(f.finding_key, '|', 2) = g.grant_id
                WHERE f.report = 'clawback.csv' AND g.revoked_at IS NULL
                  AND EXISTS (SELECT 1 FROM recon.apple_transactions a WHERE a.transaction_id = g.transaction_id
                              AND coalesce(a.cancellation_date_ms, a.revocation_date_ms) IS NOT NULL)
                ORDER BY md5(f.finding_key) LIMIT 2)
              AND coalesce(t.cancellation_date_ms, t.revocation_date_ms) IS NOT NULL
            """)
        var reasons: Set<Closing.Reason> = []
        let base = n.settings.asOf
        for later in [0, 45, 200] {
            let asOf = base + EpochMillis(later) * 86_400_000
            let (stage, _) = try n.stage(asOf: asOf)
            var s = n.settings
            s.asOf = asOf
            // The night's facts of every finding, as if all of them closed, and the rules' reasons.
            var sql: [String: String] = [:]
            try n.db.transaction {
                try stage.closingReasons(n.db, findings: "SELECT finding_key, report FROM recon.findings") { batch in
                    for r in batch { sql[r.key] = r.reason.rawValue }
                }
            }
            #expect(sql.count == findings.count)
            // The facts, gathered apart: Apple's rows, the grants now.
            let apple = try n.db.query("""
                SELECT transaction_id, purchase_date_ms::text, cancellation_date_ms::text, revocation_date_ms::text,
                       revocation_type, reversed_date_ms::text FROM recon.apple_transactions
                """).rows.reduce(into: [String: [(purchaseDate: EpochMillis, revocation: Revocation)]]()) { m, r in
                m[r[0]!, default: []].append((Int64(r[1]!)!, Revocation(
                    cancellationDate: r[2].flatMap { Int64($0) }, revocationDate: r[3].flatMap { Int64($0) },
                    revocationType: r[4], reversedDate: r[5].flatMap { Int64($0) })))
            }
            let grants = try n.db.query("SELECT grant_id, transaction_id, revoked_ms IS NOT NULL FROM g").rows
            let grantRevoked = grants.reduce(into: [String: Bool]()) { $0[$1[0]!] = $1[2] == "t" }
            let grantTransaction = grants.reduce(into: [String: String]()) { $0[$1[0]!] = $1[1]! }
            let activeTransactions = Set(grants.filter { $0[2] == "f" }.map { $0[1]! })
            for (key, report) in findings {
                let id = key.split(separator: "|", omittingEmptySubsequences: false).dropFirst().first.map(String.init) ?? ""
                let facts = Closing.Facts(
                    apple: apple[id] ?? [], grantedNow: activeTransactions.contains(id), grantRevoked: grantRevoked[id] ?? false,
                    grantRefundReversed: grantTransaction[id].map { (apple[$0] ?? []).contains { $0.revocation.isReversed } } ?? false)
                let reason = Closing.reason(report: try #require(ReportFile(rawValue: report)), facts, settings: s.decisionSettings)
                reasons.insert(reason)
                #expect(sql[key] == reason.rawValue, "\(key) as of +\(later) days: the SQL says \(sql[key] ?? "-"), the core \(reason.rawValue)")
            }
        }
        #expect(reasons == Set(Closing.Reason.allCases), "reasons seen: \(reasons)")
    }

    // MARK: A report column, described once

    /// The columns of a table of the job schema, in order.
    static func columns(_ db: PGConnection, _ table: String) throws -> [String] {
        try db.query("""
            SELECT column_name FROM information_schema.columns WHERE table_schema = 'recon' AND table_name = \(table)
            ORDER BY ordinal_position
            """).rows.compactMap { $0[0] }
    }

    @Test("the findings table and the spool, made by a migration, have the cells the reports' descriptions give")
    func findingsTableFollowsTheDescriptions() throws {
        let t = try TestDatabase("rule_cells")
        defer { t.drop() }
        try Migrations.apply(t.db, schema: try JobSchema("recon"))
        let cells = (1...ReportFile.findingsCells).map { "c\($0)" }
        #expect(try Self.columns(t.db, "current_findings") == ["report", "finding_key"] + cells,
                "a report's description changed its cells: add a migration that changes current_findings")
        #expect(try Self.columns(t.db, "compensation_spool").filter { $0.hasPrefix("c") && Int($0.dropFirst()) != nil } == cells)
        for file in ReportFile.allCases where file.isFindings {
            #expect(file.layout.cells <= ReportFile.findingsCells && file.layout.names.filter { $0 == "first_seen" }.count == 1)
        }
        // An install from before migration 10 made both tables at run time, with 13 cells and then
        // two more: the migration keeps them and they end the same.
        let old = try TestDatabase("rule_cells_old")
        defer { old.drop() }
        let schema = try JobSchema("recon")
        try old.db.execute("""
            CREATE SCHEMA recon;
            CREATE UNLOGGED TABLE recon.current_findings (report text NOT NULL, finding_key text NOT NULL,
                c1 text, c2 text, c3 text, c4 text, c5 text, c6 text, c7 text, c8 text, c9 text, c10 text, c11 text, c12 text, c13 text);
            INSERT INTO recon.current_findings (report, finding_key, c1) VALUES ('compensate.csv', 'compensate|1|production', 'O1')
            """)
        try Migrations.apply(old.db, schema: schema)
        #expect(try Self.columns(old.db, "current_findings") == ["report", "finding_key"] + cells)
        #expect(try old.int("SELECT count(*) FROM recon.current_findings") == 1)
    }

    @Test("a test-only column added to one description is in the header, the workbook's kinds, the money totals and the tally")
    func oneColumnOnePlace() throws {
        let proceeds = ReportColumn("test_proceeds", .money, money: .summed([MoneyTotal("test_proceeds")]))
        var layout = ReportFile.compensate.layout
        let before = layout
        layout.columns.insert(proceeds, at: 0)
        #expect(layout.names == ["test_proceeds"] + before.names)
        #expect(layout.kinds == [.money] + before.kinds)
        // Money: the new column is summed per currency beside the old total.
        var row = Array(repeating: "", count: layout.columns.count)
        row[0] = "12.5"
        row[layout.names.firstIndex(of: "amount")!] = "4.99"
        row[layout.names.firstIndex(of: "currency")!] = "USD"
        var totals: [String: [String: Int64]] = [:]
        layout.addMoney(row, to: &totals)
        #expect(totals == ["USD": ["test_proceeds": 12_500, "owed": 4_990]])
        // Apple's proceeds count under the currency their row names for them, not the price's; an
        // empty cell adds nothing.
        row[layout.names.firstIndex(of: "proceeds")!] = "3.49"
        row[layout.names.firstIndex(of: "proceeds_currency")!] = "EUR"
        totals = [:]
        layout.addMoney(row, to: &totals)
        #expect(totals == ["USD": ["test_proceeds": 12_500, "owed": 4_990], "EUR": ["proceeds_owed": 3_490]])
        row[layout.names.firstIndex(of: "proceeds_currency")!] = ""
        totals = [:]
        layout.addMoney(row, to: &totals)
        #expect(totals == ["USD": ["test_proceeds": 12_500, "owed": 4_990]])
        // The proceeds are filled when the CSV is written, never cells of the findings table.
        #expect(before.cellIndex("proceeds") == nil && before.cellIndex("proceeds_currency") == nil && before.cellIndex("first_seen") == nil)
        // The findings table needs one more cell: a migration (the test above fails until one is added).
        #expect(layout.cells == before.cells + 1 && layout.cells > ReportFile.findingsCells)
        // The tally reads `order_id` where the description now puts it.
        var settings = JobSettings(asOf: 0, jobSchema: try JobSchema("recon"))
        settings.windowDays = 30
        let moved = Conservation.bucketSQL(.orders, settings: settings) { $0 == .compensate ? layout : $0.layout }.joins
        let today = Conservation.bucketSQL(.orders, settings: settings).joins
        #expect(today.text.contains("SELECT DISTINCT \"c1\" AS k FROM \"recon\".current_findings WHERE report = $1")
                && today.values.first == "compensate.csv", "\(today)")
        #expect(moved.text.contains("SELECT DISTINCT \"c2\" AS k FROM \"recon\".current_findings WHERE report = $1")
                && moved.values.first == "compensate.csv", "\(moved)")
        // The rows the core makes give their cells in the description's order.
        let row1 = CompensationRow(orderID: "O1", userID: "U1", productID: "p", productType: .consumable, quantity: 2,
                                   transactionID: "t1", originalTransactionID: "t0", purchaseDate: 0, environment: .production,
                                   match: .exact, reason: .paidNotGranted, receiptID: nil)
        #expect(row1.cells.count == before.cells && row1.cells[before.cellIndex("user_id")!] == "U1"
                && row1.cells[before.cellIndex("quantity")!] == "2")
    }
}
