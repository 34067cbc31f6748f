// coverage.csv as the generator knows it (`iap-sim seed --expected DIR`): Apple's
// daily Summary Sales Reports of the job's window against the production purchases and refunds the
// job learns, per report day (`--sales-report-timezone`), product, country and currency, after the
// nights of a demo (a night, then a rerun at the same as-of: every receipt answered).
//
// Apple's side is the truth the generator wrote (AppleTruthWriter.rows, the unseen purchases): a
// production purchase of a served app, not family-shared, is a sale of its quantity on its
// purchase day in its storefront's country and currency; a refund (not reversed, not a
// FAMILY_REVOKE) is a refund on its day.
//
// The job's side comes from the scenarios, not from the job: how each of Apple's transactions
// reaches the job (storefront and currency, or neither).
// - A receipt the night verifies (submitted in the window, not settled at upload (status 0/21006
//   and an active grant of its transaction), not an input error, Apple answers it with data): its
//   transactions, without storefront or currency (`unknown` / `unknown`); a genuine StoreKit 2
//   signed upload instead: storefront and currency.
// - The refund sweep: the newest receipt of each user holding an active grant of a
//   non-consumable, subscription or non-renewing purchase granted in the refund window; one
//   settled at upload is asked for the first time there (the clean subscriptions: unknown/unknown,
//   or signed).
// - A ONE_TIME_CHARGE notification (every consumable, non-consumable and non-renewing purchase
//   Apple notified, sent by as-of), a REFUND or REFUND_REVERSED notification, a consumption
//   request's outcome (REFUND_DECLINED, listed by as-of): signed, storefront and currency.
//   Auto-renewables have no purchase notification.
// - The transaction history of a customer the night asks (an open order in the window and a
//   production transaction known from a receipt of theirs the night verified): every transaction
//   of that customer in the app, signed.
// - Never: purchases the shop never saw (`--unseen-share`), auto-renewables only on receipts the
//   night does not ask (outside the window, settled at upload and not a sweep's newest).
// The job counts a refund when a notification or a history showed it, or a receipt it verified
// carried it (the refund list); a reversal it saw cancels the refund. Every receipt is answered
// after the rerun (the faults' retries), so the figures are those of the demo's second night.

import AppStoreSimulator
import Foundation
import Reconciliation

enum SalesCoverage {
    static let file = "coverage.csv"
    /// The night's order: by day, then product, country and currency in byte order.
    static func sorted(_ rows: [[String]]) -> [[String]] { Seeder.sortedRows(rows) }
    static let columns = [
        "report_date", "product_id", "country", "currency", "apple_units_sold", "job_units_sold",
        "apple_units_refunded", "job_units_refunded",
    ]
    /// The job's default `--window-days` (the sales report window the night asks).
    static let windowDays = 30
    /// The job's notification sweep starts `--refund-window-days` (90) before as-of.
    static let refundWindowDays = 90

    struct Key: Hashable {
        var day: String, product: String, country: String, currency: String
    }

    struct Figures {
        var appleSold = 0, jobSold = 0, appleRefunded = 0, jobRefunded = 0
        var differs: Bool { appleSold != jobSold || appleRefunded != jobRefunded }
    }

    /// What the job knows of one Apple transaction.
    struct Learned {
        var storefront: SimStorefront?
        var currency: String?
        var refundMs: Int64?
    }

    /// The window's report days held after the nights: from the day `windowDays` before as-of to
    /// the day before as-of's, those published (08:00 Los Angeles the day after) by `clock`: the
    /// simulator publishes by its wall clock, so a night at a past as-of holds days Apple had not
    /// yet published at that as-of.
    static func heldDays(asOf: Int64, clock: Int64, zone: TimeZone) -> Set<String> {
        let last = SalesReportBook.day(of: asOf, in: zone)
        var day = SalesReportBook.day(of: asOf - Int64(windowDays) * Span.day, in: zone)
        var out = Set<String>()
        while day < last {
            if let published = SalesReportBook.publishedMs(day), published <= clock { out.insert(day) }
            guard let start = UTC.parse(day + "T00:00:00Z") else { break }
            day = UTC.date(start + Span.day)
        }
        return out
    }

    static func alpha2(_ s: SimStorefront) -> String { SalesReportBook.alpha2(s) }

    /// coverage.csv's rows (unsorted) for `plan`.
    /// `clock`: when the nights run (the seed's wall clock, or as-of when later).
    static func rows(plan: ScenarioPlan, refundsServed: Bool, zone: TimeZone, clock: Int64) -> [[String]] {
        let settings = plan.settings
        let asOf = settings.asOf
        let held = heldDays(asOf: asOf, clock: max(asOf, clock), zone: zone)
        let served = Set(settings.apps.map(\.bundle))
        let ours = Set(settings.productRows.map(\.productID))
        var groups: [Key: Figures] = [:]
        func apple(_ row: AppleTruthRow) {
            guard row.environment == .production, served.contains(row.bundleID), !row.familyShared,
                ours.contains(row.productID)
            else { return }
            let day = SalesReportBook.day(of: row.purchaseDateMs, in: zone)
            if held.contains(day) {
                groups[
                    Key(day: day, product: row.productID, country: alpha2(row.storefront), currency: row.storefront.currency),
                    default: Figures()
                ].appleSold += row.quantity
            }
            if let refund = row.refund, refund.reversedMs == nil, refund.type != "FAMILY_REVOKE" {
                let rday = SalesReportBook.day(of: refund.cancellationDateMs, in: zone)
                if held.contains(rday) {
                    groups[
                        Key(
                            day: rday, product: row.productID, country: alpha2(row.storefront),
                            currency: row.storefront.currency), default: Figures()
                    ].appleRefunded += row.quantity
                }
            }
        }
        let sold = forEachUser(plan: plan, refundsServed: refundsServed) { truth, known in
            for row in truth { apple(row) }
            for (tid, learned) in known {
                guard let row = truth.first(where: { $0.transactionID == tid }), row.environment == .production,
                    !row.familyShared, ours.contains(row.productID)
                else { continue }
                let country = learned.storefront.map(alpha2) ?? "unknown"
                let currency = learned.storefront == nil ? "unknown" : (learned.currency ?? "unknown")
                let day = SalesReportBook.day(of: row.purchaseDateMs, in: zone)
                if held.contains(day) {
                    groups[
                        Key(day: day, product: row.productID, country: country, currency: currency),
                        default: Figures()
                    ].jobSold += row.quantity
                }
                if let ms = learned.refundMs {
                    let rday = SalesReportBook.day(of: ms, in: zone)
                    if held.contains(rday) {
                        groups[
                            Key(day: rday, product: row.productID, country: country, currency: currency),
                            default: Figures()
                        ].jobRefunded += row.quantity
                    }
                }
            }
        }
        // The purchases the shop never saw: Apple's side only.
        for row in UnseenPurchases.rows(share: settings.unseenShare, sold: sold, settings: settings) { apple(row) }
        return groups.filter { $0.value.differs }.map { key, f in
            [
                key.day, key.product, key.country, key.currency, String(f.appleSold), String(f.jobSold),
                String(f.appleRefunded), String(f.jobRefunded),
            ]
        }
    }

    /// Each user's Apple transactions (the truth, consumption requests marked) and how the job
    /// learns them (`jobKnows`); returns Apple's production purchases, the count `--unseen-share`
    /// is a share of.
    static func forEachUser(
        plan: ScenarioPlan, refundsServed: Bool,
        _ body: (_ truth: [AppleTruthRow], _ known: [String: Learned]) -> Void
    ) -> Int {
        var sold = 0
        plan.forEach { d in
            var truth = AppleTruthWriter.rows(d, refundsServed: refundsServed)
            _ = ConsumptionRequests.mark(&truth, d, settings: plan.settings)
            sold += truth.filter { $0.environment == .production }.count
            body(truth, jobKnows(d, truth: truth, settings: plan.settings, refundsServed: refundsServed))
        }
        return sold
    }

    /// How the job learns each of the scenario's Apple transactions (by transaction id); absent:
    /// never.
    static func jobKnows(_ d: UserData, truth: [AppleTruthRow], settings: GeneratorSettings, refundsServed: Bool)
        -> [String: Learned]
    {
        let asOf = settings.asOf
        let windowStart = asOf - Int64(windowDays) * Span.day
        let sweepStart = asOf - Int64(refundWindowDays) * Span.day
        let byID = Dictionary(truth.map { ($0.transactionID, $0) }, uniquingKeysWith: { a, _ in a })
        let listRefunds = Dictionary(d.refunds.map { ($0.transactionID, $0.refund) }, uniquingKeysWith: { a, _ in a })
        let badReceipts = Set(d.inputErrors.filter { $0.first == "iap_receipts" }.compactMap { $0.count > 1 ? $0[1] : nil })
        var out: [String: Learned] = [:]
        var verifiedBy: [String: [String]] = [:]  // user → transaction ids of receipts verified with data
        func learn(_ tid: String, signed: Bool) {
            guard let row = byID[tid] else { return }
            var l = out[tid] ?? Learned()
            if signed, l.storefront == nil {
                l.storefront = row.storefront
                l.currency = row.currency
            }
            out[tid] = l
        }
        // 1. Receipts and signed uploads the night verifies.
        let activeGrants = Set(d.grants.filter { $0.revokedAt == nil }.map(\.transactionID))
        for r in d.receipts {
            guard let sim = r.sim, sim.st == nil || sim.st == 0 || sim.st == 21006,
                r.signed != .tampered && r.signed != .unknownRoot, sim.environment == .production,
                r.submittedAt >= windowStart, r.submittedAt <= asOf, r.userID != nil, !badReceipts.contains(r.receiptID)
            else { continue }
            if let status = r.verifyStatus, status == 0 || status == 21006, let t = r.transactionID,
                activeGrants.contains(t)
            {
                continue
            }
            for t in sim.txs where byID[t.tid] != nil {
                learn(t.tid, signed: r.signed == .genuine)
                if let user = r.userID { verifiedBy[user, default: []].append(t.tid) }
                // verifyReceipt shows a refund of the refund list as its cancellation date.
                if r.signed == nil, refundsServed, let refund = listRefunds[t.tid] {
                    out[t.tid]?.refundMs = refund.cancellationDateMs
                }
            }
        }
        // 1b. The refund sweep: each user holding an active grant of a non-consumable, a
        // subscription or a non-renewing purchase granted in the refund window has their newest
        // receipt asked again when it was resolved; one settled at upload (status 0/21006 with an
        // active grant) is asked for the first time (verifyReceipt, or Get Transaction Info for
        // a signed upload).
        let durable: Set<String> = ["non_consumable", "auto_renewable", "non_renewing"]
        let types = Dictionary(settings.productRows.map { ($0.productID, $0.productType) }, uniquingKeysWith: { a, _ in a })
        let holders = Set(
            d.grants.filter {
                $0.revokedAt == nil && durable.contains(types[$0.productID] ?? "") && $0.grantedAt >= sweepStart
                    && $0.grantedAt <= asOf
            }.compactMap(\.userID))
        for user in holders {
            let mine = d.receipts.filter { $0.userID == user && $0.submittedAt <= asOf && !badReceipts.contains($0.receiptID) }
            guard let r = mine.max(by: { ($0.submittedAt, $0.receiptID) < ($1.submittedAt, $1.receiptID) }),
                let status = r.verifyStatus, status == 0 || status == 21006, let t = r.transactionID, activeGrants.contains(t),
                let sim = r.sim, sim.st == nil || sim.st == 0 || sim.st == 21006,
                r.signed != .tampered && r.signed != .unknownRoot, sim.environment == .production
            else { continue }
            for t in sim.txs where byID[t.tid] != nil {
                learn(t.tid, signed: r.signed == .genuine)
                verifiedBy[user, default: []].append(t.tid)
                if r.signed == nil, refundsServed, let refund = listRefunds[t.tid] {
                    out[t.tid]?.refundMs = refund.cancellationDateMs
                }
            }
        }
        // 2. Notifications: ONE_TIME_CHARGE, REFUND, REFUND_REVERSED sent in the sweep's range.
        func sent(_ type: String, _ row: AppleTruthRow, at ms: Int64) -> Bool {
            let n = SimNotification(type: type, row: row, index: 0, at: ms, refund: nil)
            return n.sentMs >= sweepStart && n.sentMs < asOf
        }
        var reversed = Set<String>()
        for row in truth where row.notified && row.environment == .production {
            if row.productType != .autoRenewable, sent("ONE_TIME_CHARGE", row, at: row.purchaseDateMs) {
                learn(row.transactionID, signed: true)
            }
            if let refund = row.refund, refund.type != "FAMILY_REVOKE", sent("REFUND", row, at: refund.cancellationDateMs) {
                learn(row.transactionID, signed: true)
                out[row.transactionID]?.refundMs = refund.cancellationDateMs
                if let back = refund.reversedMs, sent("REFUND_REVERSED", row, at: back) { reversed.insert(row.transactionID) }
            }
            // A consumption request's outcome (REFUND_DECLINED before as-of: the generator asks only
            // where Apple declines) is listed at exactly its time, with the transaction.
            if let request = row.consumptionRequest, row.refund == nil {
                let ms = ConsumptionOutcomeModel.outcomeMs(transactionID: row.transactionID, request: request)
                if ms >= sweepStart && ms < asOf { learn(row.transactionID, signed: true) }
            }
        }
        // 3. Transaction histories of the customers asked.
        let open = Set(
            d.orders.filter {
                $0.transactionID == nil && $0.status != "delivered" && $0.createdAt >= windowStart && $0.createdAt <= asOf
            }.compactMap(\.userID))
        for user in open where !(verifiedBy[user] ?? []).isEmpty {
            for row in truth where row.customer == user && row.environment == .production {
                learn(row.transactionID, signed: true)
                if let refund = row.refund, refund.type != "FAMILY_REVOKE" {
                    out[row.transactionID]?.refundMs = refund.cancellationDateMs
                    if refund.reversedMs != nil { reversed.insert(row.transactionID) }
                }
            }
        }
        for tid in reversed { out[tid]?.refundMs = nil }
        return out
    }
}
