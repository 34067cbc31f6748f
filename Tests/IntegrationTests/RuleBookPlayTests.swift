import Foundation
import JobStore
import Logging
import NightLearn
import PlayNight
import PlaySimulator
import Postgres
import Reconciliation
import Testing

extension RuleBookTests {
    /// Where the night's Play rows of a report (`night`, keyed by column name) differ from the rows
    /// the core made (`core`, each its cells): compared on the report's cells (`first_seen` and
    /// the proceeds are the writer's), as whole rows in any order.
    static func rowDifferences(_ file: ReportFile, night: [[String: String]], core: [[String]]) -> [String] {
        let names = file.layout.cellNames
        let got = night.map { row in names.map { row[$0] ?? "<no \($0)>" }.joined(separator: ",") }.sorted()
        let want = core.map { $0.joined(separator: ",") }.sorted()
        guard got != want else { return [] }
        var onlyNight = got, onlyCore = want
        for row in want { if let i = onlyNight.firstIndex(of: row) { onlyNight.remove(at: i) } }
        for row in got { if let i = onlyCore.firstIndex(of: row) { onlyCore.remove(at: i) } }
        return onlyNight.map { "\(file.rawValue): the night only: \($0)" }
            + onlyCore.map { "\(file.rawValue): the core only: \($0)" }
    }

    /// Google Play on the generator's two-store night (every Play family played, its census
    /// checked), three properties:
    /// - **The facts.** For every token the night stored in `play_purchases`, the `PlayFacts` that
    ///   `PlayGather` gives over the Play working tables remade by the night's own statements
    ///   (`PlayDecide.copiesSQL`, in `pg_temp` as `lookup` makes them) equal the facts gathered
    ///   apart (`PlayFactsApart`: the generator's truth file and the shop's raw rows, joined in
    ///   Swift), field by field. A wrong fact in the facts gathered apart (a voided record
    ///   dropped, a grant's user changed) is reported, naming the token.
    /// - **The tokens asked** (contract, "Google Play purchases"): the tokens in `play_purchases`
    ///   and `play_attempts` are exactly the `receipt_data` of Play's clean receipt rows uploaded in
    ///   the window, and the tokens Play's notifications of the configured package published in the
    ///   window name (a one-time product's purchase or cancellation, a voided one-time product).
    ///   A voided record alone asks nothing: the voided list only adds facts to a token asked.
    /// - **The rows.** `PlayRules.decide` over the facts gathered apart gives exactly the night's
    ///   Play rows of duplicate_grants.csv, clawback.csv, refunds.csv, unattributed.csv and
    ///   acknowledge.csv (a key once, as the night writes it), and every Play row of
    ///   compensate.csv, whole, through the order match the night runs after Play's rules
    ///   (`Decide.matchOrders`, over the shop's clean Play orders). Every Play compensation of the
    ///   generator has an exact order (its transaction id, account id or upload names one): the
    ///   inferred match, Apple's shared matcher, is met here only if a family without one is added.
    @Test(
        "Google Play: the facts PlayGather gives equal the facts gathered apart, the tokens asked are the contract's, and the rules over the facts apart give the night's Play rows"
    )
    func playFactsTokensAndRows() throws {
        let (night, ran) = try TwoStoreNight.ranOnce("rule_play")
        defer { night.stop() }
        let db = night.t.db
        var settings = JobSettings(asOf: try #require(UTC.parse(night.asOf)), jobSchema: try JobSchema("recon"))
        settings.databaseURL = "dbname=\(night.t.name)"
        try StoreViews.checkSources(&settings, db: db, source: db, command: "rule book")

        // The facts as the night gathers them, over its working tables made again.
        let stage = PlayDecide(settings: settings, logger: Logger(label: "rule-book-test"))
        try db.execute(
            stage.copiesSQL(try SourceStore.googlePlay.viewsSchema(of: settings.jobSchema).sql, temporary: true))
        let gather = PlayGather(settings: settings, products: try stage.products(db, rows: "pg_temp"), rows: "pg_temp")
        let tokens = try db.query("SELECT token FROM recon.play_purchases ORDER BY token").rows.compactMap { $0[0] }
        let gathered = Dictionary(try gather.facts(db, tokens: tokens).map { ($0.purchase.token, $0) }) { a, _ in a }
        // The night's own path gives the same facts: batches in token order, each read by its range
        // of tokens (seven a batch here, so that many ranges meet).
        var viaBatches: [String: PlayFacts] = [:]
        var after = "", batches = 0
        while true {
            let batch = try gather.batch(db, after: after, limit: 7)
            guard let last = batch.last else { break }
            after = last.purchase.token
            batches += 1
            for f in batch { viaBatches[f.purchase.token] = f }
        }
        #expect(batches > 3, "only \(batches) batches of \(tokens.count) tokens")
        let batchDiffer = PlayFactsApart.differences(night: viaBatches, apart: gathered)
        #expect(batchDiffer.isEmpty, "by batch and by token: \(batchDiffer.prefix(10).joined(separator: "\n"))")

        // The facts gathered apart. When the job asked for each order is its own clock: read from
        // play_orders, it must lie within the night.
        var rejected: [String: Set<String>] = [:]
        for row in LookupAgreesTests.report(night.day, "input_errors.csv")
        where row["store"] == "google_play" && !(row["problem"] ?? "").contains("duplicate key") {
            rejected[row["relation"] ?? "", default: []].insert(row["key"] ?? "")
        }
        #expect(!(rejected["iap_receipts"] ?? []).isEmpty && !(rejected["iap_orders"] ?? []).isEmpty, "\(rejected)")
        let askedAt = try db.query(
            "SELECT order_id, (extract(epoch FROM asked_at) * 1000)::bigint FROM recon.play_orders"
        )
        .rows.reduce(into: [String: EpochMillis]()) { $0[$1[0]!] = $1[1].flatMap { Int64($0) } }
        #expect(
            askedAt.values.allSatisfy { (ran.lowerBound - 1000...ran.upperBound + 1000).contains($0) },
            "\(askedAt) not within \(ran)")
        let truth = try PlayTruth.read(path: night.truth.path)
        let apart = try PlayFactsApart(
            package: TwoStoreNight.package, truth: truth, db: db, rejected: rejected, askedAt: askedAt)
        #expect(
            apart.duplicatedKeys.isEmpty,
            "Play rows whose key is duplicated (the first-row rule is not modelled): \(apart.duplicatedKeys)")
        let facts = Dictionary(uniqueKeysWithValues: tokens.map { ($0, apart.facts($0)) })

        // 1. The facts, field by field.
        let differ = PlayFactsApart.differences(night: gathered, apart: facts)
        #expect(differ.isEmpty, "\(differ.count) differences:\n\(differ.prefix(20).joined(separator: "\n"))")
        // Every kind of fact is met.
        let met: [(String, (PlayFacts) -> Bool)] = [
            ("an unknown token", { $0.purchase.verdict == .unknown }), ("voided records", { !$0.voids.isEmpty }),
            ("its order's money", { $0.order?.total != nil }), ("an exact order", { $0.exactOrder != nil }),
            ("a user", { $0.userID != nil }),
            ("nobody's, purchased", { $0.userID == nil && $0.purchase.verdict == .purchased }),
            ("grants", { !$0.grants.isEmpty }), ("an upload", { $0.receiptID != nil }),
        ]
        for (kind, holds) in met {
            #expect(facts.values.contains(where: holds), "no token with \(kind) among \(facts.count)")
        }
        // A wrong fact is caught, and its token named.
        let voided = try #require(tokens.first { facts[$0]!.voids.count > 1 })
        var wrong = facts
        wrong[voided]!.voids.removeFirst()
        let granted = try #require(tokens.first { $0 != voided && !facts[$0]!.grants.isEmpty })
        wrong[granted]!.grants[0].userID += "_other"
        let caught = Set(PlayFactsApart.differences(night: gathered, apart: wrong)).subtracting(differ).sorted()
        #expect(
            caught.count == 2 && caught.contains { $0.hasPrefix("token \(voided): voids:") }
                && caught.contains { $0.hasPrefix("token \(granted): grants:") }, "\(caught)")

        // 2. The tokens asked.
        let windowStart = settings.decisionSettings.windowStart
        let uploaded = apart.uploads.filter { $0.submittedAt >= windowStart && $0.submittedAt < settings.asOf }.map(
            \.token)
        let notified = truth.notifications.filter {
            $0.packageName == TwoStoreNight.package && $0.publishTimeMs >= windowStart
        }
        .compactMap { n -> String? in
            switch n.kind {
            case .oneTimeProduct(_, let token, _): return token
            case .voidedPurchase(let token, _, let productType, _): return productType == 2 ? token : nil
            case .pendingRefundReview, .test: return nil
            }
        }
        let expected = Set(uploaded + notified)
        let asked = Set(
            try db.query("SELECT token FROM recon.play_purchases UNION SELECT token FROM recon.play_attempts").rows
                .compactMap { $0[0] })
        #expect(
            asked == expected,
            "asked only: \(asked.subtracting(expected).sorted()); expected only: \(expected.subtracting(asked).sorted())"
        )
        #expect(!Set(notified).isSubset(of: Set(uploaded)), "no token known from a notification alone")

        // 3. The rows, each key once.
        let rules = settings.decisionSettings
        var rows: [ReportFile: [String: [String]]] = [:]
        var candidates: [CompensationCandidate] = []
        for token in tokens {
            let d = PlayRules.decide(facts[token]!, settings: rules)
            candidates += d.compensations
            for r in d.duplicates { rows[.duplicateGrants, default: [:]][r.findingKey] = r.cells }
            for r in d.clawbacks { rows[.clawback, default: [:]][r.findingKey] = r.cells }
            for r in d.refunds { rows[.refunds, default: [:]][r.findingKey] = r.cells }
            for r in d.unattributed { rows[.unattributed, default: [:]][PlayRules.unattributedKey(r)] = r.cells }
            for r in d.acknowledge { rows[.acknowledge, default: [:]][r.token] = r.cells }
        }
        for r in Decide.matchOrders(candidates, openOrders: apart.orders) {
            rows[.compensate, default: [:]][PlayRules.compensationKey(r)] = r.cells
        }
        #expect(candidates.contains { $0.exactOrder != nil }, "no Play compensation with an exact order")
        for file in [ReportFile.compensate, .duplicateGrants, .clawback, .refunds, .unattributed, .acknowledge] {
            let core = Array((rows[file] ?? [:]).values)
            let nightRows = night.playRows(file.rawValue)
            #expect(!nightRows.isEmpty, "\(file.rawValue) has no Play row")
            let differ = Self.rowDifferences(file, night: nightRows, core: core)
            #expect(differ.isEmpty, "\(differ.joined(separator: "\n"))")
        }
    }
}
