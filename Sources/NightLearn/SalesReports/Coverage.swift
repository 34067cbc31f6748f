import AppStore
import Foundation
import Postgres
import Reconciliation

/// What Apple's daily Summary Sales Reports say it sold and refunded against the
/// production purchases and refunds the job has learned (receipts, signed uploads, transaction
/// histories, notifications: `apple_transactions`), per report day (`--sales-report-timezone`),
/// product, country and currency, over the days the job holds a report for (held or empty).
///
/// Apple's side: the rows kept of a held day (products of ours, in-app purchase types, restores
/// apart): units sold are the positive units, units refunded minus the negative units of rows
/// without a CMB mark (a CMB credit is Apple's adjustment, not a customer's refund). The job's: a
/// production transaction of a product of ours, not family-shared (Apple sold it to the
/// organizer, not to the family member who shows it), counts its quantity on its purchase day,
/// and again as refunded on its refund day (the cancellation date, else a revocation that is not
/// FAMILY_REVOKE; a reversed refund counts none), under the country of its storefront (alpha-2;
/// `unknown` without one, as verifyReceipt's transactions) and its currency (`unknown` without).
package struct Coverage {
    let settings: JobSettings
    var S: SQL { settings.jobSchema.sql }

    /// Coverage of tonight's window with `settings`.
    package init(settings: JobSettings) { self.settings = settings }

    /// The vendor number of tonight's sales reports; nil: the ASC_* variables are not set.
    var vendorNumber: String? { settings.appStoreConnect?.vendorNumber }

    /// Tonight's window of report days (`ReportDays.window`), as the sales report step asks them.
    var window: (from: String, to: String)? {
        let zone = TimeZone(identifier: settings.salesReportTimeZone) ?? TimeZone(identifier: "UTC")!
        let days = ReportDays(zone: zone).window(asOf: settings.asOf, windowDays: settings.windowDays)
        guard let first = days.first, let last = days.last else { return nil }
        return (first.text, last.text)
    }

    /// A unit count as Apple prints it: `3`, `-1`, `0.5` (numeric(18,2) without its trailing zeros).
    static func units(_ x: SQL) -> SQL {
        "CASE WHEN (\(x))::text LIKE '%.%' THEN rtrim(rtrim((\(x))::text, '0'), '.') ELSE (\(x))::text END"
    }

    /// coverage.csv's rows: the groups where Apple's figures and the job's differ, in byte order.
    /// None without the ASC_* variables.
    package var csvSQL: SQL {
        guard vendorNumber != nil, window != nil else {
            return "SELECT NULL::text, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE false"
        }
        return """
            SELECT to_char(g.report_date, 'YYYY-MM-DD'), g.product_id, g.country, g.currency,
                   \(Self.units("g.apple_sold")), \(Self.units("g.job_sold")), \(Self.units("g.apple_refunded")), \(Self.units("g.job_refunded"))
            FROM (\(groupsSQL)) g WHERE g.differs
            ORDER BY g.report_date, g.product_id COLLATE "C", g.country COLLATE "C", g.currency COLLATE "C"
            """
    }

    /// Per product, over the held days of the window: Apple's units sold and refunded, the job's,
    /// and the days (ascending, comma-separated) whose figures for the product differ, whatever
    /// the country. Small: a row per product.
    var productsSQL: SQL {
        """
        WITH d AS (
            SELECT product_id, report_date, sum(apple_sold) AS a_s, sum(job_sold) AS j_s,
                   sum(apple_refunded) AS a_r, sum(job_refunded) AS j_r
            FROM (\(groupsSQL)) g GROUP BY 1, 2
        )
        SELECT product_id, \(Self.units("sum(a_s)")), \(Self.units("sum(j_s)")), \(Self.units("sum(a_r)")), \(Self.units("sum(j_r)")),
               coalesce(string_agg(to_char(report_date, 'YYYY-MM-DD'), ',' ORDER BY report_date)
                        FILTER (WHERE a_s <> j_s OR a_r <> j_r), '')
        FROM d GROUP BY product_id ORDER BY product_id COLLATE "C"
        """
    }

    /// The window's days held (with rows, or empty), in the report time zone.
    var heldDaysSQL: SQL {
        """
        SELECT count(*) FROM \(S).sales_report_days
        WHERE vendor_number = \(literal: .text(vendorNumber ?? "")) AND report_date BETWEEN \(literal: .date(window?.from ?? "1970-01-01"))
              AND \(literal: .date(window?.to ?? "1970-01-01"))
        """
    }

    /// Every group of the held days with both figures (`report_date`, `product_id`, `country`,
    /// `currency`, `apple_sold`, `job_sold`, `apple_refunded`, `job_refunded`, numeric), and
    /// `differs`. Read by `COPY (…) TO STDOUT`, which takes no parameters: its values are literals.
    var groupsSQL: SQL {
        let vendor = SQLLiteral.text(vendorNumber ?? ""), zone = SQLLiteral.text(settings.salesReportTimeZone)
        let from = SQLLiteral.date(window?.from ?? "1970-01-01"), to = SQLLiteral.date(window?.to ?? "1970-01-01")
        let table = Storefronts.all
        func day(_ ms: SQL) -> SQL { "(to_timestamp(\(ms) / 1000.0) AT TIME ZONE \(literal: zone))::date" }
        return """
            WITH held AS (
                SELECT report_date FROM \(S).sales_report_days
                WHERE vendor_number = \(literal: vendor) AND report_date BETWEEN \(literal: from) AND \(literal: to)
            ), ours AS (
                SELECT DISTINCT product_id FROM \(ident: settings.sourceSchema).iap_products WHERE product_id IS NOT NULL
            ), countries AS (
                SELECT * FROM unnest(\(literal: .textArray(table.map(\.storefront))), \(literal: .textArray(table.map(\.country))))
                    AS c(storefront, country)
            ), learned AS (
                SELECT t.product_id, t.quantity, t.purchase_date_ms,
                       CASE WHEN t.reversed_date_ms IS NOT NULL AND t.reversed_date_ms >= r.ms THEN NULL ELSE r.ms END AS refund_ms,
                       coalesce(c.country, 'unknown') AS country, coalesce(t.currency, 'unknown') AS currency
                FROM \(S).apple_transactions t
                LEFT JOIN countries c ON c.storefront = t.storefront
                CROSS JOIN LATERAL (SELECT coalesce(t.cancellation_date_ms, CASE WHEN t.revocation_type IS DISTINCT FROM 'FAMILY_REVOKE'
                                                                               THEN t.revocation_date_ms END) AS ms) r
                WHERE t.environment = 'production' AND t.product_id IN (SELECT product_id FROM ours)
                  AND t.in_app_ownership_type IS DISTINCT FROM 'FAMILY_SHARED'
            ), job AS (
                SELECT d, product_id, country, currency, sum(sold) AS sold, sum(refunded) AS refunded FROM (
                    SELECT \(day("purchase_date_ms")) AS d, product_id, country, currency, quantity AS sold, 0 AS refunded FROM learned
                    UNION ALL
                    SELECT \(day("refund_ms")), product_id, country, currency, 0, quantity FROM learned WHERE refund_ms IS NOT NULL
                ) x WHERE d IN (SELECT report_date FROM held)
                GROUP BY 1, 2, 3, 4
            ), apple AS (
                SELECT report_date AS d, product_id, country_code AS country, customer_currency AS currency,
                       coalesce(sum(units) FILTER (WHERE units > 0), 0) AS sold,
                       coalesce(-sum(units) FILTER (WHERE units < 0 AND coalesce(cmb, '') = ''), 0) AS refunded
                FROM \(S).sales_report_rows
                WHERE vendor_number = \(literal: vendor) AND NOT restore AND product_id IN (SELECT product_id FROM ours)
                  AND report_date IN (SELECT report_date FROM held)
                GROUP BY 1, 2, 3, 4
            )
            SELECT coalesce(a.d, j.d) AS report_date, coalesce(a.product_id, j.product_id) AS product_id,
                   coalesce(a.country, j.country) AS country, coalesce(a.currency, j.currency) AS currency,
                   coalesce(a.sold, 0) AS apple_sold, coalesce(j.sold, 0) AS job_sold,
                   coalesce(a.refunded, 0) AS apple_refunded, coalesce(j.refunded, 0) AS job_refunded,
                   coalesce(a.sold, 0) <> coalesce(j.sold, 0) OR coalesce(a.refunded, 0) <> coalesce(j.refunded, 0) AS differs
            FROM apple a FULL JOIN job j ON a.d = j.d AND a.product_id = j.product_id AND a.country = j.country AND a.currency = j.currency
            """
    }
}

extension Coverage {
    /// Tonight's figures per product (summary.json `coverage`, the page, the workbook); nil without
    /// the ASC_* variables or a window.
    /// summary.json's coverage figures; nil without the ASC_* variables.
    package func figures(_ db: PGConnection) throws -> SalesCoverage? {
        guard vendorNumber != nil, let window else { return nil }
        let held = Int(try db.query(heldDaysSQL).value(0, 0) ?? "0") ?? 0
        let r = try db.query(productsSQL)
        var products: [SalesCoverage.Product] = []
        for i in 0..<r.rowCount {
            func number(_ column: Int) -> Decimal {
                Decimal(string: r.value(i, column) ?? "0", locale: Locale(identifier: "en_US_POSIX")) ?? 0
            }
            let days = (r.value(i, 5) ?? "").split(separator: ",").map(String.init)
            products.append(
                SalesCoverage.Product(
                    productID: r.value(i, 0) ?? "", appleSold: number(1), jobSold: number(2),
                    appleRefunded: number(3), jobRefunded: number(4), daysDiffering: days))
        }
        return SalesCoverage(
            timeZone: settings.salesReportTimeZone, from: window.from, to: window.to, daysHeld: held,
            products: products)
    }
}
