import Postgres
import Reconciliation

/// The rows the decide stage streams from Postgres, one family after another: `T` rows (an
/// Apple transaction with its receipt and exact order) and `G` rows (a grant with what its
/// linked receipts say). Each kind names its columns once, with the SQL that fills them; the
/// SELECT lists, the row width and the reader all follow from these two enums, so adding a
/// column is one case and its SQL.
enum TransactionColumn: Int, CaseIterable {
    case key, kind, transactionID, settled, environment, productID, quantity, purchaseMs, originalPurchaseMs, expiresMs
    case cancellationMs, cancellationReason, isTrialPeriod, webOrderLineItemID, bundleID
    case receiptID, userID, orderID, orderUserID, orderProductID, orderCreatedMs
    case source, applePrice, appleCurrency, revocationMs, revocationType, reversedMs, storefront

    /// The transaction is in production, neither refunded nor revoked, and one active grant of its
    /// own covers it (not `owed`): `settled` when it is its family's only one; with its key its own
    /// id and not crowded, its family is left out of the `T` query (DecideStage.crowdedKeysSQL).
    static let standsCovered: SQL =
        "t.environment = 'production' AND t.cancellation_date_ms IS NULL "
        + "AND t.revocation_date_ms IS NULL AND ow.transaction_id IS NULL"

    /// Over `t` (apple_transactions), `f` (first receipt), `e1`/`e2` (exact orders),
    /// `w` (whose purchase, for transactions no upload showed: Attribution.swift). `f`, `e1` and
    /// `e2` hold only the transactions that their active grants may not cover, the only ones whose
    /// receipt, user and order a rule reads (DecideStage.transactionCTEs); for the others
    /// `receiptID`, `orderID` and its columns are empty and `userID` is `who`'s or empty.
    var sql: SQL {
        func order(_ column: String) -> SQL {
            "CASE WHEN e1.order_id IS NOT NULL THEN e1.\(ident: column) WHEN e2.order_id IS NOT NULL THEN e2.\(ident: column) "
                + "ELSE w.\(ident: "token_" + column) END"
        }
        switch self {
        case .key: return "t.original_transaction_id"
        case .kind: return "'T'"
        case .transactionID: return "t.transaction_id"
        case .settled:
            // The family's only transaction, in production, neither refunded nor revoked, and one
            // active grant of its own covers it (not `owed`): with the family's only grant
            // (`GrantColumn.onlyGrant`) no rule finds anything (FamilyStream.isQuiet).
            return "CASE WHEN count(*) OVER family = 1 AND \(Self.standsCovered) THEN 't' ELSE 'f' END"
        case .environment: return "t.environment"
        case .productID: return "t.product_id"
        case .quantity: return "t.quantity::text"
        case .purchaseMs: return "t.purchase_date_ms::text"
        case .originalPurchaseMs: return "t.original_purchase_date_ms::text"
        case .expiresMs: return "t.expires_date_ms::text"
        case .cancellationMs: return "t.cancellation_date_ms::text"
        case .cancellationReason: return "t.cancellation_reason"
        case .isTrialPeriod: return "t.is_trial_period::text"
        case .webOrderLineItemID: return "t.web_order_line_item_id"
        case .bundleID: return "t.bundle_id"
        case .receiptID: return "f.receipt_id"
        case .userID: return "coalesce(f.user_id, w.user_id)"
        case .orderID: return "coalesce(e1.order_id, e2.order_id, w.token_order_id)"
        case .orderUserID: return order("user_id")
        case .orderProductID: return order("product_id")
        case .orderCreatedMs: return order("created_ms") + "::text"
        case .source: return "t.source"
        case .applePrice: return "t.price_milliunits::text"
        case .appleCurrency: return "t.currency"
        case .revocationMs: return "t.revocation_date_ms::text"
        case .revocationType: return "t.revocation_type"
        case .reversedMs: return "t.reversed_date_ms::text"
        case .storefront: return "t.storefront"
        }
    }
}

enum GrantColumn: Int, CaseIterable {
    case key, kind, grantID, onlyGrant, userID, orderID, productID, transactionID, originalTransactionID, quantity, grantedMs
    case revokedMs, linkedReceipts, rejectedInvalid, rejectedWrongBundle, verifiedWithoutTransaction
    case linkedOrderQuantity, tallyKept

    /// Over `gf` (a grant with its family key) and `uf` (its receipt links and the quantity of the
    /// order linked to its transaction, counted only when Apple never showed its transaction:
    /// DecideStage.unknownFactsSQL).
    var sql: SQL {
        switch self {
        case .key: return "gf.fkey"
        case .kind: return "'G'"
        case .grantID: return "gf.grant_id"
        case .onlyGrant: return "CASE WHEN count(*) OVER family = 1 THEN 't' ELSE 'f' END"
        case .userID: return "gf.user_id"
        case .orderID: return "gf.order_id"
        case .productID: return "gf.product_id"
        case .transactionID: return "gf.transaction_id"
        case .originalTransactionID: return "gf.original_transaction_id"
        case .quantity: return "gf.quantity::text"
        case .grantedMs: return "gf.granted_ms::text"
        case .revokedMs: return "gf.revoked_ms::text"
        case .linkedReceipts: return "coalesce(uf.linked, 0)::text"
        case .rejectedInvalid: return "coalesce(uf.rejected_invalid, 0)::text"
        case .rejectedWrongBundle: return "coalesce(uf.rejected_wrong_bundle, 0)::text"
        case .verifiedWithoutTransaction: return "coalesce(uf.verified_without_transaction, 0)::text"
        case .linkedOrderQuantity: return "uf.order_quantity::text"
        case .tallyKept:
            return "CASE WHEN gf.revoked_ms IS NOT NULL OR gf.known_to_apple OR uf.linked > 0 THEN 't' ELSE 'f' END"
        }
    }
}

/// One family row as COPY delivered it, read by column name.
struct FamilyRow {
    /// Both kinds share one width: the wider kind's.
    static let width = max(TransactionColumn.allCases.count, GrantColumn.allCases.count)

    /// The SELECT list of one kind, padded with NULLs to `width`. The first three columns are
    /// named `fkey`, `kind`, `id`: each kind's query sorts by family key and id (DecideStage).
    /// The fourth is the kind's quiet flag (`settled`, `onlyGrant`), read before the rest of the row
    /// (`FamilyRow.quietFlag`).
    static func selectList<C: CaseIterable>(_ columns: C.Type, _ sql: (C) -> SQL) -> SQL {
        var list = columns.allCases.map(sql)
        list[0] += " AS fkey"
        list[1] += " AS kind"
        list[2] += " AS id"
        while list.count < width { list.append("NULL::text") }
        return list.joined(separator: ", ")
    }

    /// Whether a line's quiet flag (its fourth field) is `t`, read without splitting the line.
    static func quietFlag(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        var tabs = 0
        var i = 0
        while i < line.count, tabs < 3 {
            if line[i] == 9 { tabs += 1 }
            i += 1
        }
        return tabs == 3 && i < line.count && line[i] == 116 && (i + 1 == line.count || line[i + 1] == 9)
    }

    /// The first field (the family key) when it has no escape; nil otherwise.
    static func plainKey(_ line: UnsafeBufferPointer<UInt8>) -> String? {
        var end = 0
        while end < line.count, line[end] != 9 {
            if line[end] == 92 { return nil }
            end += 1
        }
        return String(decoding: UnsafeBufferPointer(rebasing: line[0..<end]), as: UTF8.self)
    }

    let fields: [String?]

    init?(_ line: UnsafeBufferPointer<UInt8>) {
        fields = CopyText.fields(line)
        guard fields.count == Self.width else { return nil }
    }

    var key: String? { fields[0] }
    var isTransaction: Bool { fields[1] == "T" }
    var isGrant: Bool { fields[1] == "G" }

    subscript(_ c: TransactionColumn) -> String? { fields[c.rawValue] }
    subscript(_ c: GrantColumn) -> String? { fields[c.rawValue] }

    /// A `T` row as the core's `KnownTransaction`, its product's type and list price from
    /// `products`; nil when a required field is missing.
    func transaction(_ products: ProductCatalog) -> KnownTransaction? {
        guard let tid = self[TransactionColumn.transactionID], let otid = self[TransactionColumn.key],
            let env = self[TransactionColumn.environment].flatMap(AppStoreEnvironment.init(rawValue:)),
            let pid = self[TransactionColumn.productID], let qty = self[TransactionColumn.quantity].flatMap({ Int($0) }),
            let pd = self[TransactionColumn.purchaseMs].flatMap({ Int64($0) })
        else { return nil }
        let t = AppleTransaction(
            transactionID: tid, originalTransactionID: otid, productID: pid, quantity: qty, purchaseDate: pd,
            originalPurchaseDate: self[.originalPurchaseMs].flatMap { Int64($0) },
            expiresDate: self[.expiresMs].flatMap { Int64($0) },
            isTrialPeriod: self[.isTrialPeriod].map { $0 == "true" },
            webOrderLineItemID: self[.webOrderLineItemID], environment: env, bundleID: self[TransactionColumn.bundleID])
        var order: OrderRef?
        if let oid = self[TransactionColumn.orderID], let user = self[.orderUserID],
            let product = self[.orderProductID], let created = self[.orderCreatedMs].flatMap({ Int64($0) })
        {
            order = OrderRef(orderID: oid, userID: user, productID: product, createdAt: created)
        }
        var price = PriceFacts()
        if let m = self[.applePrice].flatMap({ Int64($0) }), let c = self[.appleCurrency] {
            price.apple = Money(milliunits: m, currency: c)
        }
        let product = products[pid]
        price.listUnit = product?.listUnit
        // Apple's refund facts as learned; the core decides what stands (`KnownTransaction.learned`).
        let revocation = Revocation(
            cancellationDate: self[.cancellationMs].flatMap { Int64($0) },
            cancellationReason: self[.cancellationReason],
            revocationDate: self[.revocationMs].flatMap { Int64($0) },
            revocationType: self[.revocationType], reversedDate: self[.reversedMs].flatMap { Int64($0) })
        return KnownTransaction(
            transaction: t, productType: product?.type,
            receiptID: self[.receiptID], userID: self[TransactionColumn.userID], exactOrder: order,
            source: self[.source].flatMap(TransactionSource.init(rawValue:)) ?? .receipt, price: price,
            storefront: self[.storefront]
        ).learned(revocation)
    }

    /// A `G` row as the core's `GrantFacts`, its product's type and list price from `products`;
    /// nil when a required field is missing.
    func grant(_ products: ProductCatalog) -> GrantFacts? {
        guard let gid = self[GrantColumn.grantID], let user = self[GrantColumn.userID],
            let pid = self[GrantColumn.productID], let tid = self[GrantColumn.transactionID],
            let qty = self[GrantColumn.quantity].flatMap({ Int($0) }),
            let granted = self[GrantColumn.grantedMs].flatMap({ Int64($0) })
        else { return nil }
        let grant = Grant(
            grantID: gid, userID: user, orderID: self[GrantColumn.orderID], productID: pid, transactionID: tid,
            originalTransactionID: self[GrantColumn.originalTransactionID], quantity: qty,
            grantedAt: granted, revokedAt: self[.revokedMs].flatMap { Int64($0) })
        func count(_ c: GrantColumn) -> Int { Int(self[c] ?? "0") ?? 0 }
        let links = ReceiptLinks(
            linked: count(.linkedReceipts), rejectedInvalid: count(.rejectedInvalid),
            rejectedWrongBundle: count(.rejectedWrongBundle),
            verifiedWithoutTransaction: count(.verifiedWithoutTransaction))
        let product = products[pid]
        return GrantFacts(
            grant: grant, productType: product?.type,
            links: links, linkedOrderQuantity: self[.linkedOrderQuantity].flatMap { Int($0) },
            listUnitPrice: product?.listUnit)
    }
}

/// The valid products (`p`: SourceRows.swift), read once per night. A family row carries its
/// product id, and its type and list price are looked up here: joining `p` into each family
/// query hashed the product id of every one of a million rows,
/// where only the rows a rule reads need them. A
/// product that is not here (Apple's, unknown to the source) has no type and no price, as the
/// LEFT JOIN gave.
package struct ProductCatalog: Sendable {
    struct Product: Sendable {
        let type: ProductType?
        let listUnit: Money?
    }

    private let products: [String: Product]

    private init(_ products: [String: Product]) { self.products = products }

    subscript(_ productID: String) -> Product? { products[productID] }

    /// `p`'s rows; made by `DecideStage.productsSQL`, one row per product id.
    static func load(_ db: PGConnection) throws -> ProductCatalog {
        let result = try db.query("SELECT product_id, product_type, list_milli::text, list_currency FROM p")
        var products: [String: Product] = [:]
        for row in result.rows {
            guard let id = row[0] else { continue }
            var listUnit: Money?
            if let m = row[2].flatMap({ Int64($0) }), let c = row[3] { listUnit = Money(milliunits: m, currency: c) }
            products[id] = Product(type: row[1].flatMap(ProductType.init(rawValue:)), listUnit: listUnit)
        }
        return ProductCatalog(products)
    }
}
