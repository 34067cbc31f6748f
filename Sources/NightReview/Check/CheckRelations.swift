import Foundation
import JobStore
import Logging
import NightDecide
import NightLearn
import Postgres
import Reconciliation

/// What `check` reads of the source relations, with the night's own checks in SQL: per relation
/// its rows and input errors by reason, the kept keys that now hold other content, the grants
/// without a transaction id, tonight's receipts, and the last published night's counts.
extension Check {
    var window: String { UTC.timestamp(settings.windowStart) + " to " + UTC.timestamp(settings.asOf) }

    var windowPredicate: (String) -> SQL {
        { column in
            "x.\(ident: column) >= to_timestamp(\(literal: .int(settings.windowStart)) / 1000.0) "
                + "AND x.\(ident: column) <= to_timestamp(\(literal: .int(settings.asOf)) / 1000.0)" as SQL
        }
    }

    /// The products' CTEs the product checks read (`known_products`, as the night makes it).
    var productsCTE: SQL {
        """
        p AS (SELECT DISTINCT ON (product_id) product_id, product_type FROM \(src).iap_products WHERE product_id IS NOT NULL
              ORDER BY product_id, \(SourceRelation.products.firstRowOrder)),
        known_products AS (SELECT DISTINCT k.product_id,
                                  (p.product_id IS NOT NULL AND p.product_type IN \(SourceRelation.productTypes)) AS valid
                           FROM \(src).iap_products k LEFT JOIN p ON p.product_id = k.product_id WHERE k.product_id IS NOT NULL)
        """
    }

    /// The problems of one relation's rows, as the night's checks say them (SourceRows.swift).
    func problems(_ relation: SourceRelation, exactForms: Bool) -> [SQL] {
        var checks = relation.checks(jobSchema: settings.jobSchema, dataFormLater: !exactForms).map(\.problem)
        if relation == .receipts && !exactForms {
            checks.append(
                """
                CASE WHEN x.receipt_data IS NOT NULL AND NOT (
                    x.receipt_data ~ '^[[:space:]]*[A-Za-z0-9+/]+[[:space:]A-Za-z0-9+/]*=?=?[[:space:]]*$'
                    OR x.receipt_data ~ '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$')
                THEN 'receipt_data is neither base64 (an app receipt) nor a JWS (a signed transaction)' END
                """)
        }
        return checks
    }

    /// A problem's text without the value it names, so that rows group by reason.
    static let reasonSQL: SQL = """
        CASE WHEN pr LIKE 'unknown product_id %' THEN 'unknown product_id'
             WHEN pr LIKE 'product_id % has no valid row in iap_products' THEN 'product_id has no valid row in iap_products'
             WHEN pr LIKE 'quantity % is below 1' THEN 'quantity is below 1'
             WHEN pr LIKE 'product_type % is not one of %' THEN 'product_type is not one of consumable, non_consumable, auto_renewable, non_renewing'
             ELSE pr END
        """

    func stats(_ relation: SourceRelation, time: String?, source: PGConnection, exactForms: Bool) throws -> Relation {
        let key = relation.keySQL
        let problems = problems(relation, exactForms: exactForms).joined(separator: ", ")
        // Each row numbered within its key as the night picks a key's first row (before the
        // products are joined, whose product_id would make the order's columns ambiguous).
        let numbered: SQL = """
            (SELECT *, row_number() OVER (PARTITION BY \(key) ORDER BY \(relation.firstRowOrder)) AS check_rn
             FROM \(src).\(relation.name))
            """
        let rowsCTE: SQL = """
            WITH \(productsCTE),
            rows AS (
                SELECT x.\(key)::text AS k, x.check_rn AS rn,
                       array_remove(ARRAY[\(problems)]::text[], NULL) AS problems,
                       \(time.map { "(\(windowPredicate($0)))" as SQL } ?? ("false" as SQL)) AS in_window
                FROM \(relation.from(numbered)))
            """
        let totals = try source.query(
            """
            \(rowsCTE)
            SELECT count(*),
                   count(*) FILTER (WHERE k IS NULL OR (rn > 1) OR cardinality(problems) > 0),
                   count(*) FILTER (WHERE k IS NOT NULL AND rn = 1 AND cardinality(problems) = 0 AND in_window)
            FROM rows
            """)
        let reasons = try source.query(
            """
            \(rowsCTE),
            reasons AS (
                SELECT k, 'duplicate key' AS reason FROM rows WHERE k IS NOT NULL AND rn > 1
                UNION ALL
                SELECT r.k, \(Self.reasonSQL) FROM rows r CROSS JOIN LATERAL unnest(r.problems) pr WHERE r.rn = 1 OR r.k IS NULL)
            SELECT reason, count(*), array_to_string(array_agg(coalesce(k, '(null)') ORDER BY k COLLATE "C") FILTER (WHERE n <= 5), E'\\x1f')
            FROM (SELECT reason, k, row_number() OVER (PARTITION BY reason ORDER BY k COLLATE "C") AS n FROM reasons) s
            GROUP BY reason ORDER BY count(*) DESC, reason COLLATE "C"
            """)
        let rows = Int(totals.value(0, 0) ?? "") ?? 0, errors = Int(totals.value(0, 1) ?? "") ?? 0
        return Relation(
            relation: relation.rawValue, rows: rows, input_errors: errors,
            input_errors_percent: rows == 0 ? "0.0" : NightHold.oneDecimal(Double(errors) * 100 / Double(rows)),
            reasons: (0..<reasons.rowCount).map { i in
                Reason(
                    reason: reasons.value(i, 0) ?? "", rows: Int(reasons.value(i, 1) ?? "") ?? 0,
                    examples: (reasons.value(i, 2) ?? "").split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init))
            },
            in_window: time == nil ? nil : Int(totals.value(0, 2) ?? "") ?? 0)
    }

    /// The kept keys (`$1`, their digests `$2`) found in the source, and those whose row now digests otherwise.
    func keysSQL(_ relation: SourceRelation, keys: [String], digests: [String]) -> SQL {
        let digest = HeldNight.digestSQL(relation, submittedMs: SourceRelation.epochMilliseconds("c.submitted_at"))
        return """
            SELECT count(DISTINCT k.key), count(DISTINCT k.key) FILTER (WHERE k.digest <> \(digest))
            FROM unnest(\(keys)::text[], \(digests)::bigint[]) AS k(key, digest)
            JOIN \(src).\(relation.name) c ON c.\(relation.keySQL)::text = k.key
            """
    }

    func grantsWithoutTransaction(_ source: PGConnection) throws -> GrantsWithoutTransaction {
        func counts(_ column: String) throws -> [Count] {
            let r = try source.query(
                """
                SELECT v, n FROM (SELECT coalesce(\(ident: column)::text, '(null)') AS v, count(*) AS n FROM \(src).iap_grants
                                  WHERE transaction_id IS NULL GROUP BY 1) s
                ORDER BY n DESC, v COLLATE "C" LIMIT 20
                """)
            return (0..<r.rowCount).map { Count(value: r.value($0, 0) ?? "", rows: Int(r.value($0, 1) ?? "") ?? 0) }
        }
        let total = Int(try source.query("SELECT count(*) FROM \(src).iap_grants WHERE transaction_id IS NULL").value(0, 0) ?? "") ?? 0
        var result = GrantsWithoutTransaction(rows: total, by_product: [], by: [:])
        guard total > 0 else { return result }
        result.by_product = try counts("product_id")
        for column in by {
            let exists =
                try source.query(
                    """
                    SELECT 1 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE n.nspname = \(settings.sourceSchema) AND c.relname = 'iap_grants' AND a.attname = \(column)
                      AND a.attnum > 0 AND NOT a.attisdropped
                    """
                ).rowCount > 0
            guard exists else {
                throw JobError(.usage, "check: --by \(column): \(settings.sourceSchema).iap_grants has no such column")
            }
            result.by[column] = try counts(column)
        }
        return result
    }

    /// Tonight's receipts: settled at upload, signed, to verify; with the last published night's rates.
    /// Without a definitive answer yet, when the job schema is there and in the same database.
    func receipts(db: PGConnection, source: PGConnection, jobSchema: Bool, exactForms: Bool) throws -> Receipts {
        let clean = SourceRelation.receipts.cleanRows("\(src).iap_receipts", jobSchema: settings.jobSchema, dataFormLater: !exactForms)
        let settledAtUpload: SQL = """
            (coalesce(x.verify_status, -1) IN (0, 21006) AND EXISTS (
                SELECT 1 FROM \(src).iap_grants g WHERE g.transaction_id = x.transaction_id AND g.revoked_at IS NULL))
            """
        let answered = jobSchema && source === db
        let r = try source.query(
            """
            SELECT count(*), count(*) FILTER (WHERE \(settledAtUpload)),
                   count(*) FILTER (WHERE \(SourceRelation.hasDot("x.receipt_data"))),
                   count(*) FILTER (WHERE NOT \(SourceRelation.hasDot("x.receipt_data")) AND NOT \(settledAtUpload)
                                      \(answered ? "AND NOT coalesce(s.definitive, false)" as SQL : ""))
            FROM \(clean) x
            \(answered ? "LEFT JOIN \(S).receipt_state s ON s.receipt_id = x.receipt_id" as SQL : "")
            WHERE \(windowPredicate("submitted_at"))\(exactForms ? "" : " AND (\(problems(.receipts, exactForms: false).last!)) IS NULL" as SQL)
            """)
        let inWindow = Int(r.value(0, 0) ?? "") ?? 0, settled = Int(r.value(0, 1) ?? "") ?? 0, signed = Int(r.value(0, 2) ?? "") ?? 0
        let toVerify = Int(r.value(0, 3) ?? "") ?? 0
        var receipts = Receipts(in_window: inWindow, settled_at_upload: settled, signed: signed, to_verify: toVerify)
        if jobSchema {
            let rate = try db.query(
                """
                SELECT (summary->'verification'->>'requests')::numeric, (summary->'verification'->>'candidates')::numeric,
                       (summary->'seconds'->>'verify')::numeric
                FROM \(S).runs WHERE \(HeldNight.publishedSQL) AND (summary->'verification'->>'requests')::numeric > 0
                  AND (summary->'seconds'->>'verify')::numeric > 0
                ORDER BY run_id DESC LIMIT 1
                """)
            if rate.rowCount > 0, let requests = Double(rate.value(0, 0) ?? ""), let asked = Double(rate.value(0, 1) ?? ""),
                let seconds = Double(rate.value(0, 2) ?? ""), asked > 0
            {
                receipts.measured_requests_per_receipt = (requests / asked * 100).rounded() / 100
                receipts.measured_requests_per_second = (requests / seconds * 10).rounded() / 10
                let estimated = Double(toVerify) * requests / asked
                receipts.estimated_requests = Int(estimated.rounded())
                receipts.estimated_seconds = Int((estimated / (requests / seconds)).rounded(.up))
            }
        }
        return receipts
    }

    /// The last published night's rows per report (summary.json `counts`).
    func lastCounts(_ db: PGConnection) throws -> [String: Int] {
        let r = try db.query(
            """
            SELECT c.key, c.value FROM (SELECT summary FROM \(S).runs WHERE \(HeldNight.publishedSQL) ORDER BY run_id DESC LIMIT 1) n,
                 jsonb_each_text(CASE WHEN jsonb_typeof(n.summary->'counts') = 'object' THEN n.summary->'counts' ELSE '{}' END) c
            """)
        var counts: [String: Int] = [:]
        for i in 0..<r.rowCount { if let k = r.value(i, 0), let v = r.value(i, 1).flatMap({ Int($0) }) { counts[k] = v } }
        return counts
    }
}
