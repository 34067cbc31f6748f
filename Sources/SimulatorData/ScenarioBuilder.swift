import AppStoreSimulator
import Reconciliation

/// Builds the rows of one scenario.
struct ScenarioBuilder {
    let settings: GeneratorSettings
    var rng: SeededRandom
    let u: Int
    var data = UserData()
    /// The products of the app the user plays in.
    let cat: Catalog
    private var counters: [Int: (o: Int, r: Int, g: Int, t: Int)] = [:]

    /// `app`: the app played in; default the slot's (`GeneratorSettings.app(ofSlot:)`).
    init(settings: GeneratorSettings, rng: SeededRandom, u: Int, app: Catalog? = nil) {
        self.settings = settings
        self.rng = rng
        self.u = u
        cat = app ?? settings.app(ofSlot: u)
        data.bundle = cat.bundle
    }

    var asOf: Int64 { settings.asOf }

    // MARK: - Row makers

    mutating func next(_ u: Int, _ field: WritableKeyPath<(o: Int, r: Int, g: Int, t: Int), Int>) -> Int {
        var c = counters[u] ?? (0, 0, 0, 0)
        let k = c[keyPath: field]
        c[keyPath: field] = k + 1
        counters[u] = c
        return k
    }

    mutating func tid(_ u: Int) -> String { IDs.transaction(u, next(u, \.t)) }

    /// A transaction id and a web-order-line-item id from the same counter slot.
    mutating func tidAndWol(_ u: Int) -> (String, String) {
        let k = next(u, \.t)
        return (IDs.transaction(u, k), IDs.webOrderLine(u, k))
    }

    @discardableResult
    mutating func order(_ u: Int, _ product: String, qty: Int = 1, status: String, tid: String?, at: Int64) -> OrderRow {
        let row = OrderRow(
            orderID: IDs.order(u, next(u, \.o)), userID: IDs.user(u), productID: product, quantity: qty,
            status: status, transactionID: tid, createdAt: at)
        data.orders.append(row)
        return row
    }

    @discardableResult
    mutating func receipt(
        _ u: Int, order: String?, tidColumn: String?, at: Int64, verify: Int?,
        env: AppStoreEnvironment = .production, style: SimReceipt.Style? = nil, st: Int? = nil,
        bundle: String? = nil, txs: [SimTransaction]
    ) -> ReceiptRow {
        let id = IDs.receipt(u, next(u, \.r))
        let chosenStyle = style ?? defaultStyle(txs)
        let sim = SimReceipt(rid: id, env: env, bundle: bundle ?? cat.bundle, style: chosenStyle, st: st, txs: txs)
        let row = ReceiptRow(
            receiptID: id, userID: IDs.user(u), orderID: order, transactionID: tidColumn,
            rawData: nil, submittedAt: at, verifyStatus: verify, sim: sim)
        data.receipts.append(row)
        return row
    }

    @discardableResult
    mutating func grant(
        _ u: Int, order: String?, _ product: String, tid: String, otid: String?, qty: Int = 1,
        at: Int64, revoked: Int64? = nil
    ) -> GrantRow {
        let row = GrantRow(
            grantID: IDs.grant(u, next(u, \.g)), userID: IDs.user(u), orderID: order, productID: product,
            transactionID: tid, originalTransactionID: otid, quantity: qty, grantedAt: at, revokedAt: revoked)
        data.grants.append(row)
        return row
    }

    func tx(
        _ tid: String, otid: String? = nil, _ product: String, qty: Int = 1, at: Int64, original: Int64? = nil,
        expires: Int64? = nil, wol: String? = nil, late: Bool? = nil, type: String? = nil
    ) -> SimTransaction {
        SimTransaction(
            tid: tid, otid: otid ?? tid, pid: product, qty: qty, pd: at, opd: original ?? at, exp: expires,
            wol: wol, trial: false, type: type ?? cat.type(of: product).rawValue, late: late)
    }

    /// iOS 6 style only shows one transaction (plus the latest one of an auto-renewable), so a
    /// receipt with more transactions is always iOS 7.
    mutating func defaultStyle(_ txs: [SimTransaction]) -> SimReceipt.Style {
        let ios6Shows =
            txs.count == 1
            || (txs.count == 2 && txs[1].isAutoRenewable && txs[0].isAutoRenewable
                && txs[1].pd >= txs[0].pd)
        return ios6Shows && rng.chance(0.3) ? .ios6 : .ios7
    }

    /// An upload status that leaves the receipt unresolved (contract §2): no answer, or a
    /// temporary error.
    mutating func unresolvedStatus() -> Int? {
        rng.pick([nil, nil, nil, nil, 21005, 21009, 21002] as [Int?])
    }

    /// A purchase time inside the window with room after it (refunds, revocations).
    /// The usual start of a scenario: a purchase of one of `products` at a time in the window, its
    /// transaction id, and its order, created 5 s to 2 min before and linked to the transaction
    /// unless `linked` is false. (The random draws come in this order, always.)
    mutating func purchase(
        _ products: [String], qty: Int = 1, status: String = "delivered", linked: Bool = true,
        daysAgo: ClosedRange<Int64> = 3...25, orderLead: ClosedRange<Int64> = 5...120
    )
        -> (p: Int64, product: String, t: String, o: OrderRow)
    {
        let p = purchaseTime(minDaysAgo: daysAgo.lowerBound, maxDaysAgo: daysAgo.upperBound)
        let product = rng.pick(products)
        let t = tid(u)
        let o = order(u, product, qty: qty, status: status, tid: linked ? t : nil, at: p - seconds(orderLead))
        return (p, product, t, o)
    }

    /// A missed purchase uploaded 2 s to 1 min after it was made, without an answer at upload
    /// (or a temporary one), naming no order; and the compensation row it must give (one unit).
    mutating func uploadMissed(_ x: SimTransaction, tidColumn: String?, order: OrderRow?, match: String) {
        let r = receipt(
            u, order: nil, tidColumn: tidColumn, at: x.pd + seconds(2...60), verify: unresolvedStatus(),
            txs: [x])
        expectCompensate(
            order: order?.orderID, user: u, x, owed: 1, match: match, reason: "paid_not_granted",
            receipt: r.receiptID)
    }

    mutating func purchaseTime(minDaysAgo: Int64 = 3, maxDaysAgo: Int64 = 25) -> Int64 {
        asOf - rng.int(minDaysAgo * Span.day...maxDaysAgo * Span.day)
    }

    mutating func seconds(_ range: ClosedRange<Int64>) -> Int64 { rng.int(range) * Span.second + rng.int(0...999) }
}

private let base64Alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

func base64(_ bytes: [UInt8]) -> String {
    var out = [UInt8]()
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 2 < bytes.count {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out += [
            base64Alphabet[Int(v >> 18 & 63)], base64Alphabet[Int(v >> 12 & 63)],
            base64Alphabet[Int(v >> 6 & 63)], base64Alphabet[Int(v & 63)],
        ]
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let v = UInt32(bytes[i]) << 16
        out += [base64Alphabet[Int(v >> 18 & 63)], base64Alphabet[Int(v >> 12 & 63)], 61, 61]
    } else if rest == 2 {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out += [base64Alphabet[Int(v >> 18 & 63)], base64Alphabet[Int(v >> 12 & 63)], base64Alphabet[Int(v >> 6 & 63)], 61]
    }
    return String(decoding: out, as: UTF8.self)
}
