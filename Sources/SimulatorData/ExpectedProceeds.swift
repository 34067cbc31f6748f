// Apple's proceeds in the expected compensate.csv, clawback.csv and refunds.csv
// (`iap-sim seed --expected DIR --expect-proceeds`), derived from the generator's truth, not from
// the job: the nights read the sales reports the simulator serves from that truth.
//
// A row's transaction has proceeds when the job learns it with a storefront and a signed price
// (SalesCoverage.jobKnows), it is a production purchase of a product of ours, not family-shared,
// and Apple's report sold its product in its storefront's country and currency at its unit price
// (the price ÷ quantity, in minor units) on a report day the nights hold (SalesCoverage.heldDays).
// The simulator's Developer Proceeds of a unit is 70% of its price (SalesReportBook.proceeds), the
// same on every day, so the day the job picks (the held day nearest the purchase) does not matter
// here. Amount: that per unit × the row's units (refunds: × revocationPercentage ÷ 100 000),
// rounded once to the currency's minor unit; the proceeds currency is the customer's.

import AppStoreSimulator
import Foundation
import Reconciliation

enum ExpectedProceeds {
    /// One transaction's proceeds per unit, and its units.
    struct Unit {
        var perUnit: Int64
        var currency: String
        var quantity: Int
    }

    /// What a sale row of Apple's report is matched by.
    struct SaleKey: Hashable {
        var product: String, country: String, currency: String, unitPrice: Int64
    }

    /// Per transaction id, the proceeds of a unit of the transactions that have them.
    static func perUnit(plan: ScenarioPlan, refundsServed: Bool, zone: TimeZone, clock: Int64) -> [String: Unit] {
        let settings = plan.settings
        let held = SalesCoverage.heldDays(asOf: settings.asOf, clock: max(settings.asOf, clock), zone: zone)
        let served = Set(settings.apps.map(\.bundle))
        let ours = Set(settings.productRows.map(\.productID))
        var sales = Set<SaleKey>()
        var known: [String: (key: SaleKey, quantity: Int)] = [:]
        func counts(_ row: AppleTruthRow) -> Bool {
            row.environment == .production && !row.familyShared && ours.contains(row.productID)
        }
        func sale(_ row: AppleTruthRow) {
            guard counts(row), served.contains(row.bundleID),
                held.contains(SalesReportBook.day(of: row.purchaseDateMs, in: zone))
            else { return }
            sales.insert(
                SaleKey(
                    product: row.productID, country: SalesCoverage.alpha2(row.storefront),
                    currency: row.storefront.currency, unitPrice: SalesReportBook.unitPrice(row)))
        }
        let sold = SalesCoverage.forEachUser(plan: plan, refundsServed: refundsServed) { truth, learned in
            for row in truth { sale(row) }
            for (tid, l) in learned {
                guard let store = l.storefront, let currency = l.currency,
                    let row = truth.first(where: { $0.transactionID == tid }), counts(row), let price = row.price
                else { continue }
                let unit = MoneyText.prorated(price, 1, Int64(max(1, row.quantity)), currency: currency)
                known[tid] = (
                    SaleKey(
                        product: row.productID, country: SalesCoverage.alpha2(store), currency: currency,
                        unitPrice: unit), row.quantity
                )
            }
        }
        for row in UnseenPurchases.rows(share: settings.unseenShare, sold: sold, settings: settings) { sale(row) }
        return known.compactMapValues { k in
            guard sales.contains(k.key) else { return nil }
            return Unit(
                perUnit: SalesReportBook.proceeds(unit: k.key.unitPrice, currency: k.key.currency),
                currency: k.key.currency, quantity: k.quantity)
        }
    }

    /// `rows` of `file` with their two proceeds cells added (empty where none); `perUnit` nil: the
    /// nights read no sales report.
    static func add(_ rows: [[String]], _ file: ExpectedReport, perUnit: [String: Unit]?) -> [[String]] {
        let names = file.columns
        guard names.contains("proceeds"), let tidAt = names.firstIndex(of: "transaction_id") else { return rows }
        let quantityAt = names.firstIndex(of: "quantity"), percentageAt = names.firstIndex(of: "revocation_percentage")
        let environmentAt = names.firstIndex(of: "environment")
        return rows.map { row in
            var out = row
            var cells = ["", ""]
            let production = environmentAt.map { row[$0] == "production" } ?? true
            if let perUnit, let u = perUnit[row[tidAt]], production,
                let units = quantityAt == nil ? u.quantity : Int(row[quantityAt!])
            {
                let share = percentageAt.flatMap { Int64(row[$0]) } ?? 100_000
                let milli = MoneyText.prorated(u.perUnit * Int64(units), share, 100_000, currency: u.currency)
                cells = [MoneyText.text(milli, currency: u.currency), u.currency]
            }
            out += cells  // the last two columns

            return out
        }
    }
}
