import Foundation
import JobStore
import Logging
import Postgres
import Reconciliation

/// The shop's optional relations for refund defense, in the source schema (each may be missing;
/// a view over the shop's own tables is the intended shape):
/// - `iap_consents(user_id, consented_at)`: the player agreed to share data with Apple;
/// - `iap_consumption(transaction_id, consumption_percentage[, delivery_status])`: how much of a
///   purchase was used, milliunits 0–100000, and an `UNDELIVERED_…` value the shop states;
/// - `iap_products.sample_content_provided` (boolean).
/// A value that is not what the contract says (a percentage out of range, an unknown delivery
/// status) is left out with a warning: never sent.
struct ShopFacts {
    let schema: String
    /// Where `iap_products` is read: the App Store's views in a two-store shop.
    let productsSchema: String
    let consents: Bool
    let consumption: Bool
    let deliveryStatus: Bool
    let sampleContent: Bool
    let logger: Logger
    var src: SQL { "\(ident: schema)" }

    /// The shop's relations in `schema` (in a two-store shop, the schema of its own rows, not the
    /// views), `iap_products` in `productsSchema`.
    static func read(db: PGConnection, schema: String, productsSchema: String, logger: Logger) throws -> ShopFacts {
        let r = try db.query(
            """
            SELECT table_name, column_name FROM information_schema.columns
            WHERE (table_schema = \(schema) AND table_name IN ('iap_consents', 'iap_consumption'))
               OR (table_schema = \(productsSchema) AND table_name = 'iap_products')
            """)
        var columns: [String: Set<String>] = [:]
        for i in 0..<r.rowCount { columns[r.value(i, 0) ?? "", default: []].insert(r.value(i, 1) ?? "") }
        for (relation, needed) in [
            ("iap_consents", ["user_id", "consented_at"]),
            ("iap_consumption", ["transaction_id", "consumption_percentage"]),
        ] {
            if let have = columns[relation], let missing = needed.first(where: { !have.contains($0) }) {
                throw JobError(
                    .configuration,
                    "\(schema).\(relation) has no column \(missing) (it needs "
                        + needed.joined(separator: ", ") + "); fix the relation or drop it")
            }
        }
        return ShopFacts(
            schema: schema, productsSchema: productsSchema, consents: columns["iap_consents"] != nil,
            consumption: columns["iap_consumption"] != nil,
            deliveryStatus: columns["iap_consumption"]?.contains("delivery_status") ?? false,
            sampleContent: columns["iap_products"]?.contains("sample_content_provided") ?? false, logger: logger)
    }

    /// What the shop says about `transaction` and the users of its family.
    func facts(for transaction: AppleTransaction, in family: Family, db: PGConnection) throws -> ShopConsumptionFacts {
        var facts = ShopConsumptionFacts()
        if consents {
            var users = Set(family.grants.map(\.grant.userID))
            for k in family.transactions { if let u = k.userID { users.insert(u) } }
            if !users.isEmpty {
                let r = try db.query(
                    """
                    SELECT user_id::text, (extract(epoch FROM min(consented_at)) * 1000)::bigint
                    FROM \(src).iap_consents WHERE user_id::text = ANY(\(Array(users).sorted())::text[]) AND consented_at IS NOT NULL
                    GROUP BY user_id::text
                    """)
                for i in 0..<r.rowCount {
                    if let u = r.value(i, 0), let ms = r.value(i, 1).flatMap({ Int64($0) }) { facts.consentedAt[u] = ms }
                }
            }
        }
        if consumption {
            let status: SQL = deliveryStatus ? "delivery_status::text" : "NULL::text"
            let r = try db.query(
                """
                SELECT consumption_percentage::text, \(status) FROM \(src).iap_consumption
                WHERE transaction_id::text = \(transaction.transactionID) LIMIT 2
                """)
            if r.rowCount > 1 {
                logger.warning(
                    "iap_consumption has more than one row for a transaction: none is used",
                    metadata: ["transaction_id": "\(transaction.transactionID)"])
            } else if r.rowCount == 1 {
                if let text = r.value(0, 0) {
                    if let pct = Int(text), (0...100_000).contains(pct) {
                        facts.consumptionPercentage = pct
                    } else {
                        logger.warning(
                            "iap_consumption.consumption_percentage is not milliunits 0-100000: left out",
                            metadata: ["transaction_id": "\(transaction.transactionID)", "value": "\(text.prefix(20))"])
                    }
                }
                if let text = r.value(0, 1) {
                    if let s = DeliveryStatus(rawValue: text), s != .delivered {
                        facts.deliveryStatus = s
                    } else {
                        logger.warning(
                            "iap_consumption.delivery_status is not one of Apple's UNDELIVERED_ values: left out",
                            metadata: ["transaction_id": "\(transaction.transactionID)", "value": "\(text.prefix(40))"])
                    }
                }
            }
        }
        if sampleContent {
            let r = try db.query(
                """
                SELECT bool_or(sample_content_provided) FROM \(ident: productsSchema).iap_products WHERE product_id::text = \(transaction.productID)
                """)
            if let v = r.value(0, 0) { facts.sampleContentProvided = v == "t" }
        }
        return facts
    }
}
