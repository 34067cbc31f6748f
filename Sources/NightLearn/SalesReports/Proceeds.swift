import Foundation
import Postgres
import Reconciliation

/// Apple's proceeds beside the player's price. `compensate.csv`, `clawback.csv`
/// and `refunds.csv` carry `proceeds` and `proceeds_currency`: what Apple pays the developer for
/// the row's units, from the daily Summary Sales Reports the job holds for tonight's window
/// (Coverage.window). Filled when the CSV is written (`ReportLayout.filledAtWrite`), never part of a
/// finding: a report day arriving a night later fills a cell, it does not make a new finding.
///
/// The rule (contract "Proceeds"): the row's transaction, as the job knows it (`apple_transactions`,
/// production, not family-shared: Apple sold it to the organizer), with a storefront and a signed
/// price; the report's sale rows (positive units, not a restore, no CMB mark) of its product, its
/// storefront's country, its currency and its unit price (the signed price ÷ quantity in the
/// currency's minor units: Customer Price is one unit's); of the held days with such rows, the day
/// nearest its purchase day (in `--sales-report-timezone`; the earlier of two as near), whose rows
/// must name one Developer Proceeds and one Currency of Proceeds, else the cells stay empty. The
/// amount: that per-unit proceeds × the row's units (compensate: units owed; clawback: the grant's
/// units; refunds: the transaction's units × `revocation_percentage` ÷ 100 000), rounded once, half
/// away from zero, to the proceeds currency's minor units. Always positive, as `amount` and
/// `refunded_amount` are: what those units earned (for a refund, what the refund took back), where
/// Apple's own refund rows print positive proceeds beside negative units.
package struct Proceeds {
    let settings: JobSettings
    var S: SQL { settings.jobSchema.sql }

    /// Proceeds cells for tonight's reports with `settings`.
    package init(settings: JobSettings) { self.settings = settings }

    /// A findings report's two proceeds cells, and the join (on `current_findings c`) that gives them.
    package struct Cells {
        /// The join that gives the cells.
        package var join: SQL
        /// Apple's proceeds for the finding's transaction (milliunits), or NULL.
        package var amount: SQL
        /// The proceeds' currency, or NULL.
        package var currency: SQL
    }

    /// The cells of `file`; NULL without the ASC_* variables, a window, or a transaction column.
    package func cells(for file: ReportFile) -> Cells {
        let coverage = Coverage(settings: settings)
        let layout = file.layout
        let none = Cells(join: "", amount: "NULL::text", currency: "NULL::text")
        guard let vendor = coverage.vendorNumber, let window = coverage.window, layout.names.contains("proceeds"),
            let tid = layout.cellColumn("transaction_id")
        else { return none }
        let zone = SQLLiteral.text(settings.salesReportTimeZone)
        let table = Storefronts.all
        let t: SQL = "c.\(ident: tid)"
        // The row's units: its `quantity` cell (units owed, the grant's units), else the transaction's.
        let units: SQL =
            layout.cellColumn("quantity").map { q in
                "CASE WHEN c.\(ident: q) ~ '^[0-9]{1,9}$' THEN c.\(ident: q)::numeric END"
            } ?? "pr.quantity::numeric"
        // A refund's share: Apple's revocationPercentage in thousandths of a percent; none: all of it.
        let share: SQL =
            layout.cellColumn("revocation_percentage").map { p in
                "CASE WHEN c.\(ident: p) ~ '^[0-9]{1,6}$' THEN c.\(ident: p)::numeric / 100000 ELSE 1 END"
            } ?? "1"
        var on: SQL = "pr.transaction_id = \(t)"
        if let env = layout.cellColumn("environment") { on = on + " AND c.\(ident: env) = 'production'" }
        let join: SQL = """
            LEFT JOIN (
                WITH rates AS (
                    SELECT report_date, product_id, country_code, customer_currency, customer_price,
                           min(developer_proceeds) AS per_unit, min(proceeds_currency) AS currency,
                           count(DISTINCT (developer_proceeds, proceeds_currency)) AS kinds
                    FROM \(S).sales_report_rows
                    WHERE vendor_number = \(literal: .text(vendor))
                      AND report_date BETWEEN \(literal: .date(window.from)) AND \(literal: .date(window.to))
                      AND units > 0 AND NOT restore AND coalesce(cmb, '') = ''
                    GROUP BY 1, 2, 3, 4, 5
                ), countries AS (
                    SELECT * FROM unnest(\(literal: .textArray(table.map(\.storefront))), \(literal: .textArray(table.map(\.country))))
                        AS k(storefront, country)
                ), txs AS (
                    SELECT t.transaction_id, t.quantity, t.product_id, t.currency, k.country,
                           \(S).money_in_units(t.price_milliunits::numeric / greatest(t.quantity, 1), t.currency)::numeric AS unit_price,
                           (to_timestamp(t.purchase_date_ms / 1000.0) AT TIME ZONE \(literal: zone))::date AS d
                    FROM \(S).apple_transactions t JOIN countries k ON k.storefront = t.storefront
                    WHERE t.environment = 'production' AND t.in_app_ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
                      AND t.price_milliunits IS NOT NULL AND t.currency IS NOT NULL
                      AND t.transaction_id IN (SELECT \(ident: tid) FROM \(S).current_findings
                                               WHERE report = \(literal: .text(file.rawValue)))
                )
                SELECT DISTINCT ON (x.transaction_id) x.transaction_id, x.quantity, r.per_unit, r.currency, r.kinds
                FROM txs x JOIN rates r ON r.product_id = x.product_id AND r.country_code = x.country
                                       AND r.customer_currency = x.currency AND r.customer_price = x.unit_price
                ORDER BY x.transaction_id, abs(r.report_date - x.d), r.report_date
            ) pr ON \(on)
            """
        let amount: SQL = """
            CASE WHEN pr.kinds = 1 THEN \(S).money_in_units(pr.per_unit * 1000 * \(units) * \(share), pr.currency) END
            """
        return Cells(join: join, amount: amount, currency: "CASE WHEN pr.kinds = 1 AND (\(units)) IS NOT NULL THEN pr.currency END")
    }
}
