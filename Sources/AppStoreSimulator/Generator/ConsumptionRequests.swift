// Which Apple transactions get a CONSUMPTION_REQUEST (issue 35), and the shop's data a `respond`
// run answers from: `iap_consents`, `iap_consumption` and `iap_products.sample_content_provided`
// (Seeder.swift writes them). Everything is a hash of the seed and the transaction (or user) id:
// no scenario's random draws change, so no expected report does either.
//
// Who is asked: our app's transactions that are not refunded (by the refund list or the truth),
// by a hash against a share per kind: production consumables 6% when granted, 35% when paid but
// not granted (the scenarios' missed purchases), non-consumables 4%, non-renewing 5%,
// auto-renewable 4%, sandbox ones 10%. The reason is one of Apple's five, by hash.
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

import Reconciliation

/// A request the generator made, with what the shop knows of its transaction.
struct ConsumptionRequestFact {
    var row: AppleTruthRow
    var request: SimConsumptionRequest
    /// Our active grants cover the transaction's quantity.
    var delivered: Bool
    /// Older than 12 hours at as-of.
    var expired: Bool
}

enum ConsumptionRequests {
    /// Products whose `iap_products.sample_content_provided` is true (the others NULL).
    static func sampleContentProvided(_ productID: String, catalog: Catalog) -> Bool? {
        productID == catalog.gems || productID == catalog.seasonPass ? true : nil
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
            guard row.bundleID == settings.catalog.bundle, row.refund == nil, !refunded.contains(row.transactionID) else {
                continue
            }
            let granted = d.grants.filter { $0.transactionID == row.transactionID && $0.revokedAt == nil }
                .reduce(0) { $0 + $1.quantity }
            let delivered = granted >= row.quantity
            let p = share(row, delivered: delivered)
            let tid = SimHash.fnv(row.transactionID)
            let u = SimHash.unit(SimHash.combine(settings.seed, tid, 0xC0_45))
            let h = SimHash.combine(settings.seed, tid, 0xC0_46)
            let expired = ConsumptionOutcomeModel.draw(transactionID: row.transactionID) >= 0.95
            guard u < (expired ? min(1, 8 * p) : p) else { continue }
            let at = expired
                ? settings.asOf - Span.day - Int64(h % UInt64(4 * Span.day))
                : settings.asOf - Span.minute - Int64(h % UInt64(11 * Span.hour + 29 * Span.minute))
            guard at > row.purchaseDateMs + Span.minute else { continue }
            let reasons = SimConsumptionRequest.reasons
            let request = SimConsumptionRequest(
                signedDateMs: at, reason: reasons[Int(SimHash.combine(settings.seed, tid, 0xC0_47) % UInt64(reasons.count))])
            rows[i].consumptionRequest = request
            out.append(ConsumptionRequestFact(row: rows[i], request: request, delivered: delivered, expired: expired))
        }
        return out
    }

    /// The requests of one user (the truth rows as the truth file has them).
    static func facts(_ d: UserData, settings: GeneratorSettings) -> [ConsumptionRequestFact] {
        var rows = AppleTruthWriter.rows(d, refundsServed: settings.refundsServed)
        return mark(&rows, d, settings: settings)
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
        -> [(tid: String, percentage: Int?, status: String?)] {
        var out: [(String, Int?, String?)] = []
        for f in facts {
            let h = SimHash.combine(settings.seed, SimHash.fnv(f.row.transactionID), 0xC0_49)
            let u = SimHash.unit(h)
            if f.delivered {
                guard u < 0.60 else { continue }
                out.append((f.row.transactionID, Int(SimHash.mix(h) % 100_001), nil))
            } else {
                guard u < 0.30 else { continue }
                out.append((f.row.transactionID, nil,
                            SimHash.mix(h) & 1 == 0 ? "UNDELIVERED_QUALITY_ISSUE" : "UNDELIVERED_SERVER_OUTAGE"))
            }
        }
        return out
    }
}
