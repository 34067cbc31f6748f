import Crypto
import Foundation
import PlaySimulator
import Postgres
import Reconciliation

/// Google Play's facts of a night gathered apart from the night's SQL, to hold `PlayGather` to:
/// what Google said comes from the generator's truth file (`PlayTruth`: the purchases, their
/// voided records, their orders' money), the shop's Play rows from the four source relations read
/// whole (`store = 'google_play'`, less the rows the night rejected into input_errors.csv) and
/// joined here, in Swift, as docs/rules.md "Google Play" and the contract's "Google Play's lists"
/// say. Only the rules themselves are the core's (`PlayOwner.of`, `PlayOrderFacts.milliunits`).
struct PlayFactsApart {
    /// One row of `iap_receipts`.
    struct Upload {
        var receiptID: String, userID: String, orderID: String?, token: String, submittedAt: EpochMillis
    }

    let package: String
    let truth: PlayTruth
    /// The shop's clean Play rows.
    let products: [String: PlayProduct]
    let orders: [Order]
    let uploads: [Upload]
    let grants: [Grant]
    /// When the job asked Google for each order (`play_orders.asked_at`): the one fact that is the
    /// job's own clock, not Google's or the shop's.
    let askedAt: [String: EpochMillis]
    /// Keys of a Play row the source relations hold twice (the night uses the first; not modelled here).
    let duplicatedKeys: [String]

    /// The shop's clean Play rows of `db` (rows whose key `rejected` lists per relation left out).
    init(
        package: String, truth: PlayTruth, db: PGConnection, rejected: [String: Set<String>],
        askedAt: [String: EpochMillis]
    ) throws {
        self.package = package
        self.truth = truth
        self.askedAt = askedAt
        var duplicated: [String] = []
        func rows(_ relation: String, _ columns: SQL, key: Int = 0) throws -> [[String?]] {
            let all = try db.query("SELECT \(columns) FROM \(ident: relation) WHERE store = 'google_play'").rows
            let keyed = all.filter { $0[key] != nil }
            let counts = Dictionary(grouping: keyed, by: { $0[key]! }).filter { $0.value.count > 1 }
            duplicated += counts.keys.map { relation + " " + $0 }
            return keyed.filter { !(rejected[relation] ?? []).contains($0[key]!) && counts[$0[key]!] == nil }
        }
        func ms(_ column: SQL) -> SQL { "(extract(epoch FROM \(column)) * 1000)::bigint" }
        var products: [String: PlayProduct] = [:]
        for r in try rows("iap_products", "product_id, product_type, price::text, currency") {
            guard let type = r[1].flatMap(ProductType.init(rawValue:)) else { continue }
            let list = r[2].flatMap(Self.milliunits).flatMap { m in
                r[3].flatMap { Self.isCurrency($0) ? Money(milliunits: m, currency: $0) : nil }
            }
            products[r[0]!] = PlayProduct(type, listUnit: list)
        }
        self.products = products
        orders = try rows(
            "iap_orders", "order_id, user_id, product_id, quantity, status, transaction_id, \(ms("created_at"))"
        ).map {
            Order(
                orderID: $0[0]!, userID: $0[1]!, productID: $0[2]!, quantity: Int($0[3]!)!, status: $0[4]!,
                transactionID: $0[5],
                createdAt: Int64($0[6]!)!)
        }
        uploads = try rows("iap_receipts", "receipt_id, user_id, order_id, receipt_data, \(ms("submitted_at"))").map {
            Upload(receiptID: $0[0]!, userID: $0[1]!, orderID: $0[2], token: $0[3]!, submittedAt: Int64($0[4]!)!)
        }
        grants = try rows(
            "iap_grants",
            "grant_id, user_id, order_id, product_id, transaction_id, original_transaction_id, quantity, \(ms("granted_at")), \(ms("revoked_at"))"
        ).map {
            Grant(
                grantID: $0[0]!, userID: $0[1]!, orderID: $0[2], productID: $0[3]!, transactionID: $0[4]!,
                originalTransactionID: $0[5], quantity: Int($0[6]!)!, grantedAt: Int64($0[7]!)!,
                revokedAt: $0[8].flatMap { Int64($0) })
        }
        duplicatedKeys = duplicated.sorted()
    }

    /// A list price as `iap_products` holds it, in milliunits of one unit, rounded half away from
    /// zero; nil when it is not usable (contract §1 `price`: 0 or more, below 10^12).
    static func milliunits(_ price: String) -> Int64? {
        let parts = price.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int64(parts[0]), whole >= 0, whole < 1_000_000_000_000 else {
            return nil
        }
        let fraction = parts.count == 2 ? Array(parts[1]) + Array(repeating: "0", count: 4) : Array("0000")
        guard let milli = Int64(String(fraction[0..<3])), let next = fraction[3].wholeNumberValue else { return nil }
        return whole * 1000 + milli + (next >= 5 ? 1 : 0)
    }

    static func isCurrency(_ text: String) -> Bool {
        text.utf8.count == 3 && text.utf8.allSatisfy { $0 >= 65 && $0 <= 90 }
    }

    /// The lowercase hex SHA-256 of `text` (an `obfuscatedExternalAccountId` as Google asks apps to set it).
    static func sha256(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The facts of `token`, asked of Google in `package`.
    func facts(_ token: String) -> PlayFacts {
        let bought = truth.purchases.first { $0.purchaseToken == token && $0.packageName == package }
        var purchase = GooglePurchase(token: token, package: package, verdict: .unknown)
        if let p = bought {
            let verdicts: [PlayTruth.State: GooglePurchase.Verdict] = [
                .purchased: .purchased, .pending: .pending, .cancelled: .cancelled,
            ]
            purchase = GooglePurchase(
                token: token, package: package, verdict: verdicts[p.state]!, orderID: p.orderID,
                acknowledged: p.acknowledged,
                completedAt: p.completionTimeMs, test: p.isTest,
                lines: [
                    GooglePurchase.Line(
                        productID: p.productID, quantity: p.quantity, consumptionState: p.consumptionState)
                ])
        }
        var facts = PlayFacts(purchase: purchase, products: products)
        // Every voided record of the token, each (voided time, quantity) once.
        var seen = Set<String>()
        for v in truth.voided where v.purchaseToken == token && v.packageName == package {
            guard seen.insert("\(v.voidedTimeMs) \(v.voidedQuantity ?? -1)").inserted else { continue }
            facts.voids.append(
                PlayVoid(voidedAt: v.voidedTimeMs, quantity: v.voidedQuantity, source: v.source, reason: v.reason))
        }
        // The order's money, asked of Google for a purchased token with an order id.
        if let p = bought, purchase.verdict == .purchased, let orderID = p.orderID,
            let order = truth.purchases.first(where: { $0.orderID == orderID && $0.packageName == package })
        {
            let milli = PlayOrderFacts.milliunits(units: order.total.units, nanos: order.total.nanos)
            facts.order = PlayOrderFacts(
                state: order.orderState, total: milli.map { Money(milliunits: $0, currency: order.total.currency) },
                askedAt: askedAt[orderID])
        }
        // The shop's rows name the purchase by its order id, or by its token.
        let names: Set<String> = [token, purchase.transactionID]
        facts.grants = grants.filter { names.contains($0.transactionID) }.sorted {
            ($0.grantedAt, $0.grantID) < ($1.grantedAt, $1.grantID)
        }
        let upload = uploads.filter { $0.token == token }.min {
            ($0.submittedAt, $0.receiptID) < ($1.submittedAt, $1.receiptID)
        }
        facts.receiptID = upload?.receiptID
        // Our order: the one whose transaction_id is the purchase's, else the one its account id
        // names (`--play-account-id order`: the order id as it is, or hashed), else the order of its
        // token's earliest upload when of a product of the purchase.
        let earliest = orders.sorted { ($0.createdAt, $0.orderID) < ($1.createdAt, $1.orderID) }
        let ofTransaction = earliest.first { $0.transactionID.map(names.contains) ?? false }
        let account = bought?.obfuscatedAccountID.flatMap { a in
            earliest.first { $0.orderID == a || Self.sha256($0.orderID) == a }
        }
        let uploaded = upload?.orderID.flatMap { id in earliest.first { $0.orderID == id } }.flatMap { o in
            purchase.lines.contains { $0.productID == o.productID } ? o : nil
        }
        facts.exactOrder = (ofTransaction ?? account ?? uploaded).map {
            OrderRef(orderID: $0.orderID, userID: $0.userID, productID: $0.productID, createdAt: $0.createdAt)
        }
        facts.userID = PlayOwner.of(
            uploader: upload?.userID, accountUser: account?.userID, earliestGrantUser: facts.grants.first?.userID)
        return facts
    }

    /// Where the facts the night gathered (`night`, by token) differ from those gathered apart
    /// (`apart`): one line per token and field, naming both values. Voided records compare in time
    /// order (the facts hold them in any order).
    static func differences(night: [String: PlayFacts], apart: [String: PlayFacts]) -> [String] {
        var out: [String] = []
        for token in Set(night.keys).union(apart.keys).sorted() {
            guard let n = night[token], let a = apart[token] else {
                out.append("token \(token): gathered \(night[token] == nil ? "apart only" : "by the night only")")
                continue
            }
            func field<T: Equatable>(_ name: String, _ value: (PlayFacts) -> T) {
                if value(n) != value(a) {
                    out.append("token \(token): \(name): the night \(value(n)), apart \(value(a))")
                }
            }
            func sortedVoids(_ f: PlayFacts) -> [PlayVoid] {
                f.voids.sorted {
                    ($0.voidedAt, $0.quantity ?? 0, $0.reason) < ($1.voidedAt, $1.quantity ?? 0, $1.reason)
                }
            }
            field("package") { $0.purchase.package }
            field("verdict") { $0.purchase.verdict }
            field("order id") { $0.purchase.orderID }
            field("acknowledged") { $0.purchase.acknowledged }
            field("completed at") { $0.purchase.completedAt }
            field("test") { $0.purchase.test }
            field("lines") { $0.purchase.lines }
            field("voids", sortedVoids)
            field("order") { $0.order }
            field("user") { $0.userID }
            field("receipt") { $0.receiptID }
            field("exact order") { $0.exactOrder }
            field("products") { $0.products }
            field("grants") { $0.grants }
        }
        return out
    }
}
