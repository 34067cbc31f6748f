// Which Apple transactions get a CONSUMPTION_REQUEST, and the shop's data a `respond`
// run answers from: `iap_consents`, `iap_consumption` and `iap_products.sample_content_provided`
// (Seeder.swift writes them). Everything is a hash of the seed and the transaction (or user) id:
// no scenario's random draws change, so no expected report does either.
//
// Who is asked: our apps' transactions that are not refunded (by the refund list or the truth),
// by a hash against a share per kind: production consumables 6% when granted, 35% when paid but
// not granted (the scenarios' missed purchases), non-consumables 4%, non-renewing 5%,
// auto-renewable 4%, sandbox ones 10%. The reason is one of Apple's five, by hash. Only purchases
// whose verdict the scenarios state exactly are asked about (`judge`: granted to one user, or a
// compensate row; sandbox ones granted to one user), so the night's consumption_requests.csv after
// `respond --now <as-of> --send` is known in advance (`expectedRows`); a restore, a purchase
// outside the window, one of another finding or an input error is never asked about, and no
// request is `not_judged` or refused by Apple (no transaction is family shared).
//
// When: about 70% within the 12 hours before as-of (signedDate from as-of − 11.5 h to as-of −
// 1 min: a `respond` run with `--now` at as-of answers them), the rest 1 to 5 days before as-of
// (expired: never answered). Always after the purchase (else no request). An expired request's
// outcome falls before as-of, inside the window of the nights whose reports the generator
// writes; so expired requests are made only for transactions whose outcome draw is 0.95 or
// more (ConsumptionOutcomes.swift: declined unless told GRANT_FULL), and none of them turns into
// a refund those nights would see. The in-window ones are decided after as-of.
//
// The shop's data: consent (`iap_consents`) for about 70% of the users asked, one in ten of them
// given only after the user's first request (the job must treat that as no consent); a
// consumption percentage (`iap_consumption`) for about 60% of the granted transactions asked,
// and a delivery status UNDELIVERED_QUALITY_ISSUE or UNDELIVERED_SERVER_OUTAGE (no percentage)
// for about 30% of the undelivered ones; `sample_content_provided` true for the gems pack and
// the season pass, NULL for the other products.

import AppStoreSimulator
import Reconciliation

/// A request the generator made, with what the shop knows of its transaction.
struct ConsumptionRequestFact {
    var row: AppleTruthRow
    var request: SimConsumptionRequest
    /// Our active grants cover the transaction's quantity.
    var delivered: Bool
    /// Older than 12 hours at as-of.
    var expired: Bool
    /// The user the rules tie the request to (`RefundDefense.user`): the holder of the active
    /// grants of a delivered purchase, or the compensate row's user.
    var user: String
    /// The purchase is ours and fully granted (RefundDefense's `ours`): `DELIVERED` unless the
    /// shop says otherwise; else `UNDELIVERED_OTHER`.
    var ours: Bool
}

enum ConsumptionRequests {
    /// Products whose `iap_products.sample_content_provided` is true (the others NULL).
    static func sampleContentProvided(_ productID: String, catalog: Catalog) -> Bool? {
        sampleContentProvided(productID, apps: [catalog])
    }

    /// The same over several apps' products.
    static func sampleContentProvided(_ productID: String, apps: [Catalog]) -> Bool? {
        apps.contains { productID == $0.gems || productID == $0.seasonPass } ? true : nil
    }

    /// The share of a kind of transaction that is asked about.
    static func share(_ row: AppleTruthRow, delivered: Bool) -> Double {
        guard row.environment == .production else { return 0.10 }
        switch row.productType {
        case .consumable: return delivered ? 0.06 : 0.35
        case .nonConsumable: return 0.04
        case .nonRenewing: return 0.05
        case .autoRenewable: return 0.04
        }
    }

    /// Marks the requested rows of one user's truth and returns the requests made.
    @discardableResult
    static func mark(_ rows: inout [AppleTruthRow], _ d: UserData, settings: GeneratorSettings) -> [ConsumptionRequestFact] {
        var refunded = Set(d.appleRefunds.keys)
        for r in d.refunds { refunded.insert(r.transactionID) }
        var out: [ConsumptionRequestFact] = []
        for i in rows.indices {
            let row = rows[i]
            guard settings.apps.contains(where: { $0.bundle == row.bundleID }), row.refund == nil,
                !refunded.contains(row.transactionID)
            else {
                continue
            }
            let granted = d.grants.filter { $0.transactionID == row.transactionID && $0.revokedAt == nil }
                .reduce(0) { $0 + $1.quantity }
            let delivered = granted >= row.quantity
            // Only purchases whose verdict the generator states exactly are asked about (`judge`).
            guard let judged = judge(row, delivered: delivered, d, settings: settings) else { continue }
            let p = share(row, delivered: delivered)
            let tid = SimHash.fnv(row.transactionID)
            let u = SimHash.unit(SimHash.combine(settings.seed, tid, 0xC0_45))
            let h = SimHash.combine(settings.seed, tid, 0xC0_46)
            let expired = ConsumptionOutcomeModel.draw(transactionID: row.transactionID) >= 0.95
            guard u < (expired ? min(1, 8 * p) : p) else { continue }
            let at =
                expired
                ? settings.asOf - Span.day - Int64(h % UInt64(4 * Span.day))
                : settings.asOf - Span.minute - Int64(h % UInt64(11 * Span.hour + 29 * Span.minute))
            guard at > row.purchaseDateMs + Span.minute else { continue }
            let reasons = SimConsumptionRequest.reasons
            let request = SimConsumptionRequest(
                signedDateMs: at, reason: reasons[Int(SimHash.combine(settings.seed, tid, 0xC0_47) % UInt64(reasons.count))])
            rows[i].consumptionRequest = request
            out.append(
                ConsumptionRequestFact(
                    row: rows[i], request: request, delivered: delivered, expired: expired,
                    user: judged.user, ours: judged.ours))
        }
        return out
    }

    /// The verdict the job's rules give a purchase, where the scenarios state it exactly
    /// (`Lookup.verdict`, then `RefundDefense.decide`); nil for every other purchase, which is then
    /// never asked about, so consumption_requests.csv can be written from the scenarios:
    /// - production, fully granted (active grants, all one user's, covering the quantity): `granted`
    ///   to that user;
    /// - production with a compensate row (paid, not fully granted): `compensate`, to its user;
    /// - sandbox, fully granted to one user (`sandbox`, or `claw_back` for `sandbox_transaction`:
    ///   answered on delivery as production is).
    /// Left out: a purchase of any other finding (duplicate grants, clawback in production,
    /// unattributed, refunds), one an input error names (its grant, order or receipt), a product
    /// outside the catalogue, and a purchase not granted and not compensated (a restore, outside
    /// the window, unknown to us: the rules' verdict depends on facts the scenarios do not record).
    static func judge(_ row: AppleTruthRow, delivered: Bool, _ d: UserData, settings: GeneratorSettings)
        -> (user: String, ours: Bool)?
    {
        let tid = row.transactionID
        guard settings.apps.contains(where: { app in app.products.contains { $0.productID == row.productID } }) else {
            return nil
        }
        let bad = Set(d.inputErrors.compactMap { $0.count > 1 && !$0[1].isEmpty ? $0[1] : nil })
        let grants = d.grants.filter { $0.transactionID == tid }
        guard !bad.contains(tid), !grants.contains(where: { bad.contains($0.grantID) || $0.orderID.map(bad.contains) == true }),
            !d.receipts.contains(where: {
                ($0.transactionID == tid || $0.sim?.txs.contains { $0.tid == tid } == true)
                    && bad.contains($0.receiptID)
            }),
            !d.orders.contains(where: { $0.transactionID == tid && bad.contains($0.orderID) })
        else { return nil }
        guard !d.duplicates.contains(where: { $0.count > 5 && $0[5] == tid }),
            !d.unattributed.contains(where: { $0.first == tid }),
            !d.refundRows.contains(where: { $0.first == tid })
        else { return nil }
        let clawedBack = d.clawback.contains { $0.count > 6 && $0[6] == tid }
        let active = grants.filter { $0.revokedAt == nil }
        let holders = Set(active.map { $0.userID ?? "" })
        let oneHolder = holders.count == 1 && !holders.contains("") ? holders.first : nil
        switch row.environment {
        case .sandbox:
            guard delivered, let user = oneHolder else { return nil }
            return (user, true)
        case .production:
            guard !clawedBack else { return nil }
            let compensated = d.compensate.filter { $0.count > 8 && $0[5] == tid && $0[8] == "production" }
            if delivered {
                guard compensated.isEmpty, let user = oneHolder else { return nil }
                return (user, true)
            }
            guard compensated.count == 1, !compensated[0][1].isEmpty else { return nil }
            return (compensated[0][1], false)
        }
    }

    /// The requests of one user (the truth rows as the truth file has them).
    static func facts(_ d: UserData, settings: GeneratorSettings) -> [ConsumptionRequestFact] {
        var rows = AppleTruthWriter.rows(d, refundsServed: settings.refundsServed)
        return mark(&rows, d, settings: settings)
    }

    /// One row of consumption_requests.csv, with its sort key (requested_ms, then the UUID in
    /// byte order, as the night sorts).
    struct ExpectedRow {
        var requestedMs: Int64
        var uuid: String
        var cells: [String]
    }

    /// The CONSUMPTION_REQUEST's `notificationUUID` in the simulator's history (Notifications.swift).
    static func notificationUUID(_ f: ConsumptionRequestFact) -> String {
        SimNotification(type: "CONSUMPTION_REQUEST", row: f.row, index: 0, at: f.request.signedDateMs, refund: nil).uuid
    }

    /// consumption_requests.csv of the night `iap-reconcile run --as-of AS_OF` after one
    /// `iap-reconcile respond --now AS_OF --send` with the default options (no refund preference;
    /// `sampleContentProvided` is not a column): per request of one user's `facts`,
    /// - an expired one: `expired` (its user the rules'), Apple's outcome REFUND_DECLINED at
    ///   its listing time (ConsumptionOutcomes.swift: the generator makes expired requests only
    ///   of transactions declined without an answer; the listing falls before as-of);
    /// - no consent of the request's user at or before the request (`iap_consents`): `no_consent`;
    /// - else `sent` at as-of (respond's clock), with RefundDefense's fields: `DELIVERED` for ours
    ///   unless the shop states an `UNDELIVERED_…` value, else `UNDELIVERED_OTHER`; the percentage
    ///   left out for an auto-renewable, 0 when undelivered, else the shop's (left out when unknown);
    /// and `pending` for every request inside its window (Apple decides after it).
    static func expectedRows(_ facts: [ConsumptionRequestFact], settings: GeneratorSettings) -> [ExpectedRow] {
        let consentedAt = Dictionary(consents(facts, settings: settings).map { ($0.user, $0.at) }, uniquingKeysWith: min)
        var shop: [String: (percentage: Int?, status: String?)] = [:]
        for c in consumption(facts, settings: settings) { shop[c.tid] = (c.percentage, c.status) }
        return facts.map { f in
            let row = f.row, ms = f.request.signedDateMs
            var user = f.user, answer = "sent", detail = ""
            var status = "", percentage = "", answeredAt = ""
            var outcome = "pending", outcomeAt = ""
            if f.expired {
                (answer, detail) = ("expired", "not answered within 12 hours of the request")
                let decided = ConsumptionOutcomeModel.outcomeMs(transactionID: row.transactionID, request: f.request)
                if decided <= settings.asOf {
                    outcome =
                        ConsumptionOutcomeModel.decide(transactionID: row.transactionID, answer: nil) == .refund
                        ? "refunded" : "declined"
                    outcomeAt = UTC.timestamp(decided)
                }
            } else if let consent = consentedAt[f.user], consent <= ms {
                let shopSays = shop[row.transactionID]?.status
                let delivered = shopSays == nil && f.ours
                status = shopSays ?? (f.ours ? "DELIVERED" : "UNDELIVERED_OTHER")
                if row.productType == .autoRenewable {
                    percentage = ""
                } else if !delivered {
                    percentage = "0"
                } else {
                    percentage = shop[row.transactionID]?.percentage.map { String($0) } ?? ""
                }
                answeredAt = UTC.timestamp(settings.asOf)
            } else {
                answer = "no_consent"
            }
            let cells = [
                UTC.timestamp(ms), row.environment.rawValue, row.transactionID, row.originalTransactionID, user, row.productID,
                String(row.quantity), row.price.map { MoneyText.text($0, currency: row.currency ?? "") } ?? "",
                row.price == nil ? "" : row.currency ?? "",
                f.request.reason, answer, detail, status, percentage, "", answeredAt, "", outcome, outcomeAt, notificationUUID(f),
            ]
            return ExpectedRow(requestedMs: ms, uuid: notificationUUID(f), cells: cells)
        }
    }

    /// The rows in the night's order: requested_ms, then the UUID's bytes.
    static func sorted(_ rows: [ExpectedRow]) -> [ExpectedRow] {
        rows.sorted { a, b in
            a.requestedMs != b.requestedMs
                ? a.requestedMs < b.requestedMs
                : Array(a.uuid.utf8).lexicographicallyPrecedes(Array(b.uuid.utf8))
        }
    }

    /// `iap_consents` rows (user_id, consented_at ms) of one user's requests.
    static func consents(_ facts: [ConsumptionRequestFact], settings: GeneratorSettings) -> [(user: String, at: Int64)] {
        var firstAsked: [String: (request: Int64, purchase: Int64)] = [:]
        for f in facts {
            let old = firstAsked[f.row.customer]
            if old == nil || f.request.signedDateMs < old!.request {
                firstAsked[f.row.customer] = (f.request.signedDateMs, min(f.row.purchaseDateMs, old?.purchase ?? .max))
            }
        }
        var out: [(String, Int64)] = []
        for (user, first) in firstAsked.sorted(by: { $0.key < $1.key }) {
            let h = SimHash.combine(settings.seed, SimHash.fnv(user), 0xC0_48)
            guard SimHash.unit(h) < 0.70 else { continue }
            if SimHash.unit(SimHash.mix(h)) < 0.10 {
                // After the request: no consent for it (the job must not answer).
                out.append((user, first.request + 1 + Int64(SimHash.mix(h ^ 1) % UInt64(2 * Span.hour))))
            } else {
                out.append((user, first.purchase - Int64(SimHash.mix(h ^ 2) % UInt64(30 * Span.day))))
            }
        }
        return out
    }

    /// `iap_consumption` rows (transaction_id, consumption_percentage, delivery_status).
    static func consumption(_ facts: [ConsumptionRequestFact], settings: GeneratorSettings)
        -> [(tid: String, percentage: Int?, status: String?)]
    {
        var out: [(String, Int?, String?)] = []
        for f in facts {
            let h = SimHash.combine(settings.seed, SimHash.fnv(f.row.transactionID), 0xC0_49)
            let u = SimHash.unit(h)
            if f.delivered {
                guard u < 0.60 else { continue }
                out.append((f.row.transactionID, Int(SimHash.mix(h) % 100_001), nil))
            } else {
                guard u < 0.30 else { continue }
                out.append(
                    (
                        f.row.transactionID, nil,
                        SimHash.mix(h) & 1 == 0 ? "UNDELIVERED_QUALITY_ISSUE" : "UNDELIVERED_SERVER_OUTAGE"
                    ))
            }
        }
        return out
    }
}
