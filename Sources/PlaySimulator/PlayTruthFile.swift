// The Play truth as a file `iap-sim serve --play-truth` reads and the data generator writes: UTF-8,
// tab-separated, header lines naming the columns of the row kinds (the purchases' and the voided
// records' first; the notifications' third, which files written before notifications lack), then
// one row a line, its kind in the first column:
//
//     #purchase  package  token  order  product  quantity  state  acknowledged  completion_ms  region
//                account  test  refundable  consumption  total  tax  revenue  order_state
//     #voided    package  token  order  purchase_ms  voided_ms  source  reason  voided_quantity
//     #notification  package  event_ms  publish_ms  kind  token  order  sku  notification_type
//                product_type  refund_type  refund_reason  account
//     purchase   com.example.game  tok-1  GPA.1234-5678-9012-34567  coins_100  1  PURCHASED  true
//                1795000000000  US  acct-7  false  1  CONSUMPTION_STATE_YET_TO_BE_CONSUMED
//                USD:0.99  USD:0.08  USD:0.69  PROCESSED
//     notification  com.example.game  1795000000000  1795000004000  voided_purchase  tok-1
//                GPA.1234-5678-9012-34567  -  -  2  1  -  -
//
// A notification's kind is `one_time_product` (token, sku, notification_type), `voided_purchase`
// (token, order, product_type, refund_type), `pending_refund_review` (token: the pending refund
// token, order, refund_reason, account) or `test`; the columns its kind does not use are `-`.
// `-` stands for an absent optional value; booleans are `true`/`false`; times are Unix ms; money is
// `CUR:decimal` (`USD:12.99`, `EUR:-0.5`), exact to the nano. Empty lines are skipped. A bad line
// is refused with its number and what is wrong, never read half.

import Foundation

/// A truth file that cannot be read: where and why.
public struct PlayTruthFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file's path (`-` for text read from memory).
    public var path: String
    /// 1-based; 0 for the file as a whole.
    public var line: Int
    /// What is wrong, in words (never more than 30 characters of the file's text).
    public var problem: String
    /// `path:line: problem`.
    public var description: String { line > 0 ? "\(path):\(line): \(problem)" : "\(path): \(problem)" }
}

extension PlayTruth {
    /// The purchase rows' header line.
    public static let purchaseHeader = [
        "#purchase", "package", "token", "order", "product", "quantity", "state", "acknowledged", "completion_ms",
        "region", "account", "test", "refundable", "consumption", "total", "tax", "revenue", "order_state",
    ].joined(separator: "\t")
    /// The voided rows' header line.
    public static let voidedHeader = [
        "#voided", "package", "token", "order", "purchase_ms", "voided_ms", "source", "reason", "voided_quantity",
    ].joined(separator: "\t")

    /// The notification rows' header line (a file may lack it).
    public static let notificationHeader = [
        "#notification", "package", "event_ms", "publish_ms", "kind", "token", "order", "sku", "notification_type",
        "product_type", "refund_type", "refund_reason", "account",
    ].joined(separator: "\t")

    /// The file's text: the three header lines, the purchases, the voided records, then the
    /// notifications, each in order.
    public func fileText() -> String {
        var lines = [Self.purchaseHeader, Self.voidedHeader, Self.notificationHeader]
        for p in purchases {
            let cells: [String] = [
                "purchase", p.packageName, p.purchaseToken, p.orderID ?? "-", p.productID, String(p.quantity),
                p.state.rawValue, String(p.acknowledged), p.completionTimeMs.map { String($0) } ?? "-",
                p.regionCode ?? "-", p.obfuscatedAccountID ?? "-", String(p.isTest), String(p.refundableQuantity),
                p.consumptionState, Self.cell(p.total), Self.cell(p.tax), Self.cell(p.developerRevenue), p.orderState,
            ]
            lines.append(cells.joined(separator: "\t"))
        }
        for v in voided {
            let cells: [String] = [
                "voided", v.packageName, v.purchaseToken, v.orderID ?? "-", String(v.purchaseTimeMs),
                String(v.voidedTimeMs), String(v.source), String(v.reason), v.voidedQuantity.map { String($0) } ?? "-",
            ]
            lines.append(cells.joined(separator: "\t"))
        }
        for n in notifications {
            // token, order, sku, notification_type, product_type, refund_type, refund_reason, account
            var kind: [String?] = Array(repeating: nil, count: 9)
            switch n.kind {
            case .oneTimeProduct(let type, let token, let sku):
                kind = ["one_time_product", token, nil, sku, String(type), nil, nil, nil, nil]
            case .voidedPurchase(let token, let order, let productType, let refundType):
                kind = ["voided_purchase", token, order, nil, nil, String(productType), String(refundType), nil, nil]
            case .pendingRefundReview(let token, let order, let reason, let account):
                kind = ["pending_refund_review", token, order, nil, nil, nil, nil, String(reason), account]
            case .test:
                kind[0] = "test"
            }
            let head = ["notification", n.packageName, String(n.eventTimeMs), String(n.publishTimeMs)]
            lines.append((head + kind.map { $0 ?? "-" }).joined(separator: "\t"))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Writes the file (replacing it). Refuses a truth with a problem, so what is written reads back.
    public func write(to path: String) throws {
        if let problem { throw PlayTruthFileError(path: path, line: 0, problem: problem) }
        do {
            try fileText().write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw PlayTruthFileError(path: path, line: 0, problem: "cannot write: \(error.localizedDescription)")
        }
    }

    /// Reads a file `write(to:)` wrote (or the generator did).
    public static func read(path: String) throws(PlayTruthFileError) -> PlayTruth {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw PlayTruthFileError(path: path, line: 0, problem: "cannot read the file")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw PlayTruthFileError(path: path, line: 0, problem: "not UTF-8")
        }
        return try parse(text, path: path)
    }

    /// Reads the file's text; `path` only names it in errors.
    public static func parse(_ text: String, path: String = "-") throws(PlayTruthFileError) -> PlayTruth {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map {
            $0.hasSuffix("\r") ? $0.dropLast() : $0
        }
        guard lines.count >= 2, lines[0] == purchaseHeader, lines[1] == voidedHeader else {
            throw PlayTruthFileError(path: path, line: 1, problem: "the file does not start with the two header lines")
        }
        var truth = PlayTruth()
        let headers = lines.count > 2 && lines[2] == notificationHeader ? 3 : 2
        for (n, line) in lines.enumerated().dropFirst(headers) where !line.isEmpty {
            var row = PlayTruthRow(cells: line.split(separator: "\t", omittingEmptySubsequences: false))
            do throws(PlayTruthRow.Problem) {
                switch row.cells.first {
                case "purchase":
                    let p = try row.purchase()
                    if let problem = p.problem { throw PlayTruthRow.Problem(problem) }
                    truth.purchases.append(p)
                case "voided":
                    let v = try row.voided()
                    if let problem = v.problem { throw PlayTruthRow.Problem(problem) }
                    truth.voided.append(v)
                case "notification":
                    let note = try row.notification()
                    if let problem = note.problem { throw PlayTruthRow.Problem(problem) }
                    truth.notifications.append(note)
                default:
                    let kind = row.cells.first.map { shown(String($0)) } ?? "nothing"
                    throw PlayTruthRow.Problem("the first column is \(kind), not purchase, voided or notification")
                }
            } catch {
                throw PlayTruthFileError(path: path, line: n + 1, problem: error.problem)
            }
        }
        if let problem = truth.problem { throw PlayTruthFileError(path: path, line: 0, problem: problem) }
        return truth
    }

    /// `USD:12.99`.
    static func cell(_ money: Money) -> String {
        let negative = money.units < 0 || money.nanos < 0
        var text = money.currency + ":" + (negative ? "-" : "") + String(money.units.magnitude)
        guard money.nanos != 0 else { return text }
        var fraction = String(money.nanos.magnitude)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.last == "0" { fraction.removeLast() }
        text += "." + fraction
        return text
    }
}

/// One row's cells, read column by column; each problem names the column.
struct PlayTruthRow {
    struct Problem: Error {
        let problem: String
        init(_ problem: String) { self.problem = problem }
    }

    let cells: [Substring]
    private var next = 1

    init(cells: [Substring]) { self.cells = cells }

    mutating func purchase() throws(Problem) -> PlayTruth.Purchase {
        try columns(18)
        let package = try text("package"), token = try text("token"), order = try optional("order")
        let product = try text("product"), quantity = try int("quantity")
        let stateName = try text("state")
        guard let state = PlayTruth.State(rawValue: stateName) else {
            throw Problem("state \(shown(stateName)) is not PURCHASED, PENDING or CANCELLED")
        }
        let acknowledged = try bool("acknowledged"), completion = try optionalInt("completion_ms")
        let region = try optional("region"), account = try optional("account"), test = try bool("test")
        let refundable = try int("refundable"), consumption = try text("consumption")
        let total = try money("total"), tax = try money("tax"), revenue = try money("revenue")
        return PlayTruth.Purchase(
            packageName: package, purchaseToken: token, orderID: order, productID: product, quantity: quantity,
            state: state, acknowledged: acknowledged, completionTimeMs: completion.map(Int64.init), regionCode: region,
            obfuscatedAccountID: account, isTest: test, refundableQuantity: refundable, consumptionState: consumption,
            total: total, tax: tax, developerRevenue: revenue, orderState: try text("order_state"))
    }

    mutating func voided() throws(Problem) -> PlayTruth.Voided {
        try columns(9)
        return PlayTruth.Voided(
            packageName: try text("package"), purchaseToken: try text("token"), orderID: try optional("order"),
            purchaseTimeMs: Int64(try int("purchase_ms")), voidedTimeMs: Int64(try int("voided_ms")),
            source: try int("source"), reason: try int("reason"), voidedQuantity: try optionalInt("voided_quantity"))
    }

    mutating func notification() throws(Problem) -> PlayTruth.Notification {
        try columns(13)
        let package = try text("package"), event = Int64(try int("event_ms"))
        let publish = try optionalInt("publish_ms").map(Int64.init)
        let kindName = try text("kind")
        let token = try optional("token"), order = try optional("order"), sku = try optional("sku")
        let type = try optionalInt("notification_type"), productType = try optionalInt("product_type")
        let refundType = try optionalInt("refund_type"), reason = try optionalInt("refund_reason")
        let account = try optional("account")
        // The value of a column the kind needs; a problem when it is `-`.
        func needed<T>(_ value: T?, _ name: String) throws(Problem) -> T {
            guard let value else { throw Problem("a \(kindName) notification needs \(name)") }
            return value
        }
        // A problem when a column the kind does not use is not `-`.
        func unused(_ values: [(String, Bool)]) throws(Problem) {
            if let name = values.first(where: \.1)?.0 { throw Problem("a \(kindName) notification has no \(name)") }
        }
        let kind: PlayTruth.Notification.Kind
        switch kindName {
        case "one_time_product":
            try unused([
                ("order", order != nil), ("product_type", productType != nil), ("refund_type", refundType != nil),
                ("refund_reason", reason != nil), ("account", account != nil),
            ])
            kind = .oneTimeProduct(
                notificationType: try needed(type, "notification_type"), purchaseToken: try needed(token, "token"),
                sku: try needed(sku, "sku"))
        case "voided_purchase":
            try unused([
                ("sku", sku != nil), ("notification_type", type != nil), ("refund_reason", reason != nil),
                ("account", account != nil),
            ])
            kind = .voidedPurchase(
                purchaseToken: try needed(token, "token"), orderID: try needed(order, "order"),
                productType: try needed(productType, "product_type"), refundType: try needed(refundType, "refund_type"))
        case "pending_refund_review":
            try unused([
                ("sku", sku != nil), ("notification_type", type != nil), ("product_type", productType != nil),
                ("refund_type", refundType != nil),
            ])
            kind = .pendingRefundReview(
                pendingRefundToken: try needed(token, "token"), orderID: try needed(order, "order"),
                refundReason: try needed(reason, "refund_reason"), obfuscatedAccountID: account)
        case "test":
            try unused([
                ("token", token != nil), ("order", order != nil), ("sku", sku != nil),
                ("notification_type", type != nil), ("product_type", productType != nil),
                ("refund_type", refundType != nil), ("refund_reason", reason != nil), ("account", account != nil),
            ])
            kind = .test
        default:
            throw Problem(
                "kind \(shown(kindName)) is not one_time_product, voided_purchase, pending_refund_review or test")
        }
        return PlayTruth.Notification(packageName: package, eventTimeMs: event, publishTimeMs: publish, kind: kind)
    }

    private func columns(_ count: Int) throws(Problem) {
        guard cells.count == count else { throw Problem("\(cells.count) columns, not \(count)") }
    }

    private mutating func text(_ name: String) throws(Problem) -> String {
        let cell = String(cells[next])
        next += 1
        guard !cell.isEmpty else { throw Problem("\(name) is empty") }
        return cell
    }

    private mutating func optional(_ name: String) throws(Problem) -> String? {
        let cell = try text(name)
        return cell == "-" ? nil : cell
    }

    private mutating func int(_ name: String) throws(Problem) -> Int {
        let cell = try text(name)
        guard cell.utf8.count <= 18, cell.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let value = Int(cell) else {
            throw Problem("\(name) \(shown(cell)) is not a whole number")
        }
        return value
    }

    private mutating func optionalInt(_ name: String) throws(Problem) -> Int? {
        if cells[next] == "-" {
            next += 1
            return nil
        }
        return try int(name)
    }

    private mutating func bool(_ name: String) throws(Problem) -> Bool {
        switch try text(name) {
        case "true": return true
        case "false": return false
        case let other: throw Problem("\(name) \(shown(other)) is not true or false")
        }
    }

    /// `CUR:[-]digits[.digits]`: at most 18 whole digits and 9 decimals.
    private mutating func money(_ name: String) throws(Problem) -> PlayTruth.Money {
        let cell = try text(name)
        let bad = Problem("\(name) \(shown(cell)) is not CUR:amount (USD:12.99)")
        let parts = cell.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 else { throw bad }
        var amount = parts[1][...]
        let negative = amount.first == "-"
        if negative { amount = amount.dropFirst() }
        let pieces = amount.split(separator: ".", omittingEmptySubsequences: false)
        let digits: (Substring) -> Bool = { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
        guard (1...2).contains(pieces.count), digits(pieces[0]), pieces[0].count <= 18 else { throw bad }
        var nanos: Int64 = 0
        if pieces.count == 2 {
            guard digits(pieces[1]), pieces[1].count <= 9 else { throw bad }
            nanos = Int64(pieces[1] + String(repeating: "0", count: 9 - pieces[1].count)) ?? 0
        }
        let units = Int64(pieces[0]) ?? 0
        let money = PlayTruth.Money(
            currency: String(parts[0]), units: negative ? -units : units, nanos: Int32(negative ? -nanos : nanos))
        if let problem = money.problem { throw Problem("\(name): \(problem)") }
        return money
    }
}
