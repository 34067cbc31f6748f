// Renders a SimReceipt the way Apple's legacy verifyReceipt answers: iOS 7 style
// (`receipt.in_app[]`, strings everywhere) or iOS 6 style (the transaction directly in
// `receipt`, `bid`, numbers in places), with refunds applied.

import Reconciliation

/// A refund Apple knows about: adds `cancellation_date*` and `cancellation_reason`. The Server
/// API shows more of it than verifyReceipt: its type, a prorated share, and its reversal.
public struct SimRefund: Sendable, Equatable {
    public var cancellationDateMs: Int64
    public var reason: String
    /// Apple's `revocationType`: nil is REFUND_FULL (what every refund of the refund list is);
    /// REFUND_PRORATED (with `percentage`) or FAMILY_REVOKE.
    public var type: String?
    /// `revocationPercentage` of a prorated refund, milliunits of a percent (50000 = 50%).
    public var percentage: Int?
    /// When Apple reversed the refund (REFUND_REVERSED): from then on the transaction shows no
    /// revocation, and the notification history holds a REFUND_REVERSED after the REFUND.
    public var reversedMs: Int64?

    public static let types: Set<String> = ["REFUND_FULL", "REFUND_PRORATED", "FAMILY_REVOKE"]

    public init(cancellationDateMs: Int64, reason: String, type: String? = nil, percentage: Int? = nil,
                reversedMs: Int64? = nil) {
        self.cancellationDateMs = cancellationDateMs
        self.reason = reason
        self.type = type
        self.percentage = percentage
        self.reversedMs = reversedMs
    }

    /// Apple's `revocationType` as signed.
    public var revocationType: String { type ?? "REFUND_FULL" }
}

/// The refund list file: one line per refunded transaction,
/// `transaction_id,cancellation_date_ms,cancellation_reason`. Blank lines, `#` comments and a
/// header line starting with `transaction_id` are skipped.
public enum RefundList {
    public static func parse(_ text: String) -> [String: SimRefund] {
        var out: [String: SimRefund] = [:]
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            let line = raw.trimmingSpaces()
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix("transaction_id") { continue }
            let parts = line.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingSpaces() }
            guard parts.count >= 2, !parts[0].isEmpty, let ms = Int64(parts[1]) else { continue }
            out[parts[0]] = SimRefund(cancellationDateMs: ms, reason: parts.count >= 3 ? parts[2] : "0")
        }
        return out
    }

    public static func line(transactionID: String, _ refund: SimRefund) -> String {
        "\(transactionID),\(refund.cancellationDateMs),\(refund.reason)\n"
    }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}

/// An ordered JSON value, enough for verifyReceipt answers.
indirect enum JSONValue {
    case string(String)
    case int(Int64)
    case bool(Bool)
    case object([(String, JSONValue)])
    case array([JSONValue])

    func write(into out: inout [UInt8]) {
        switch self {
        case .string(let s): SimJSON.appendQuoted(s, to: &out)
        case .int(let n): out.append(contentsOf: String(n).utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (k, v)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                SimJSON.appendQuoted(k, to: &out)
                out.append(UInt8(ascii: ":"))
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, v) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
    }

    var bytes: [UInt8] {
        var b: [UInt8] = []
        b.reserveCapacity(4096)
        write(into: &b)
        return b
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }
}

/// Apple's three date renderings, formatted straight into bytes (this is the hot path of an answer).
enum AppleDate {
    /// `2017-07-14 03:08:45 Etc/GMT`
    static func gmt(_ ms: Int64) -> String {
        format(ms, suffix: " Etc/GMT")
    }

    /// `2017-07-13 20:08:45 America/Los_Angeles` (US daylight-saving rules since 2007).
    static func pst(_ ms: Int64) -> String {
        format(ms + losAngelesOffsetMs(ms), suffix: " America/Los_Angeles")
    }

    private static func format(_ ms: Int64, suffix: StaticString) -> String {
        let secs = floorDiv(ms, 1000)
        let days = floorDiv(secs, 86_400)
        let sod = secs - days * 86_400
        let (y, m, d) = civil(days)
        var b = [UInt8](repeating: 0, count: 19)
        func put(_ v: Int64, _ at: Int, _ width: Int) {
            var v = v
            for i in stride(from: at + width - 1, through: at, by: -1) {
                b[i] = UInt8(48 + v % 10)
                v /= 10
            }
        }
        put(y, 0, 4); b[4] = 45; put(m, 5, 2); b[7] = 45; put(d, 8, 2); b[10] = 32
        put(sod / 3600, 11, 2); b[13] = 58; put(sod % 3600 / 60, 14, 2); b[16] = 58; put(sod % 60, 17, 2)
        suffix.withUTF8Buffer { b.append(contentsOf: $0) }
        return String(decoding: b, as: UTF8.self)
    }

    static func losAngelesOffsetMs(_ ms: Int64) -> Int64 {
        let hour: Int64 = 3_600_000
        let (year, _, _) = civil(floorDiv(floorDiv(ms, 1000), 86_400))
        // DST starts the second Sunday of March at 02:00 PST (10:00 UTC) and ends the first
        // Sunday of November at 02:00 PDT (09:00 UTC).
        let start = nthSunday(year: year, month: 3, n: 2) + 10 * hour
        let end = nthSunday(year: year, month: 11, n: 1) + 9 * hour
        return (ms >= start && ms < end) ? -7 * hour : -8 * hour
    }

    private static func nthSunday(year: Int64, month: Int64, n: Int64) -> Int64 {
        let first = UTC.millis(year: year, month: month, day: 1)
        let days = floorDiv(first, 86_400_000)
        let weekday = ((days % 7) + 7 + 4) % 7  // 1970-01-01 was a Thursday; 0 = Sunday
        let firstSunday = 1 + (7 - weekday) % 7
        return UTC.millis(year: year, month: month, day: firstSunday + 7 * (n - 1))
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { UTC.floorDiv(a, b) }
    private static func civil(_ days: Int64) -> (Int64, Int64, Int64) { UTC.civil(fromDays: days) }
}

/// Builds verifyReceipt answer bodies.
enum AppleAnswer {
    /// `{"status":N,"environment":"Production"}` and, for 211xx, the retryable flag.
    static func statusOnly(_ status: Int, environment: AppStoreEnvironment, retryable: Bool? = nil,
                           dashedRetryableKey: Bool = false) -> [UInt8] {
        var members: [(String, JSONValue)] = [("status", .int(Int64(status))), ("environment", .string(envName(environment)))]
        if let retryable {
            members.append((dashedRetryableKey ? "is-retryable" : "is_retryable", .bool(retryable)))
        }
        return JSONValue.object(members).bytes
    }

    static func envName(_ env: AppStoreEnvironment) -> String {
        env == .production ? "Production" : "Sandbox"
    }

    /// A full answer with data (status 0 or 21006).
    static func render(_ r: SimReceipt, status: Int, environment: AppStoreEnvironment, token: String,
                       refunds: [String: SimRefund]) -> [UInt8] {
        switch r.style {
        case .ios7: return ios7(r, status: status, environment: environment, token: token, refunds: refunds)
        case .ios6: return ios6(r, status: status, environment: environment, token: token, refunds: refunds)
        }
    }

    // MARK: iOS 7

    private static func ios7Transaction(_ t: SimTransaction, refunds: [String: SimRefund]) -> JSONValue {
        var m: [(String, JSONValue)] = [
            ("quantity", .string(String(t.qty))),
            ("product_id", .string(t.pid)),
            ("transaction_id", .string(t.tid)),
            ("original_transaction_id", .string(t.otid)),
            ("purchase_date", .string(AppleDate.gmt(t.pd))),
            ("purchase_date_ms", .string(String(t.pd))),
            ("purchase_date_pst", .string(AppleDate.pst(t.pd))),
            ("original_purchase_date", .string(AppleDate.gmt(t.opd))),
            ("original_purchase_date_ms", .string(String(t.opd))),
            ("original_purchase_date_pst", .string(AppleDate.pst(t.opd))),
        ]
        if let exp = t.exp {
            m.append(("expires_date", .string(AppleDate.gmt(exp))))
            m.append(("expires_date_ms", .string(String(exp))))
            m.append(("expires_date_pst", .string(AppleDate.pst(exp))))
        }
        if let wol = t.wol { m.append(("web_order_line_item_id", .string(wol))) }
        m.append(("is_trial_period", .string(t.trial ? "true" : "false")))
        if t.exp != nil || t.isAutoRenewable { m.append(("is_in_intro_offer_period", .string("false"))) }
        if let refund = refunds[t.tid] {
            m.append(("cancellation_date", .string(AppleDate.gmt(refund.cancellationDateMs))))
            m.append(("cancellation_date_ms", .string(String(refund.cancellationDateMs))))
            m.append(("cancellation_date_pst", .string(AppleDate.pst(refund.cancellationDateMs))))
            m.append(("cancellation_reason", .string(refund.reason)))
        }
        return .object(m)
    }

    private static func ios7(_ r: SimReceipt, status: Int, environment: AppStoreEnvironment, token: String,
                             refunds: [String: SimRefund]) -> [UInt8] {
        let inApp = r.txs.filter { $0.late != true }
        let created = inApp.map(\.pd).max() ?? r.txs.map(\.opd).min() ?? 0
        let firstOpd = r.txs.map(\.opd).min() ?? created
        let receipt: JSONValue = .object([
            ("receipt_type", .string(environment == .production ? "Production" : "ProductionSandbox")),
            ("adam_id", .int(environment == .production ? 1_258_428_153 : 0)),
            ("app_item_id", .int(environment == .production ? 1_258_428_153 : 0)),
            ("bundle_id", .string(r.bundle)),
            ("application_version", .string("1")),
            ("download_id", .int(0)),
            ("version_external_identifier", .int(0)),
            ("receipt_creation_date", .string(AppleDate.gmt(created))),
            ("receipt_creation_date_ms", .string(String(created))),
            ("receipt_creation_date_pst", .string(AppleDate.pst(created))),
            ("request_date", .string(AppleDate.gmt(created))),
            ("request_date_ms", .string(String(created))),
            ("request_date_pst", .string(AppleDate.pst(created))),
            ("original_purchase_date", .string(AppleDate.gmt(firstOpd))),
            ("original_purchase_date_ms", .string(String(firstOpd))),
            ("original_purchase_date_pst", .string(AppleDate.pst(firstOpd))),
            ("original_application_version", .string("1.0")),
            ("in_app", .array(inApp.map { ios7Transaction($0, refunds: refunds) })),
        ])
        var top: [(String, JSONValue)] = [
            ("status", .int(Int64(status))), ("environment", .string(envName(environment))), ("receipt", receipt),
        ]
        let subs = r.txs.filter(\.isAutoRenewable).sorted { ($0.pd, $0.tid) < ($1.pd, $1.tid) }
        if !subs.isEmpty {
            top.append(("latest_receipt_info", .array(subs.reversed().map { ios7Transaction($0, refunds: refunds) })))
            top.append(("latest_receipt", .string(token)))
            var seen = Set<String>()
            var pending: [JSONValue] = []
            for t in subs.reversed() where seen.insert(t.otid).inserted {
                var p: [(String, JSONValue)] = [
                    ("auto_renew_product_id", .string(t.pid)),
                    ("original_transaction_id", .string(t.otid)),
                    ("product_id", .string(t.pid)),
                    ("auto_renew_status", .string(status == 21006 ? "0" : "1")),
                ]
                if status == 21006 { p.append(("expiration_intent", .string("1"))) }
                pending.append(.object(p))
            }
            top.append(("pending_renewal_info", .array(pending)))
        }
        return JSONValue.object(top).bytes
    }

    // MARK: iOS 6

    /// iOS 6 style mixes types: `transaction_id`, `item_id`, `purchase_date_ms` and
    /// `web_order_line_item_id` as bare numbers, `original_transaction_id`, `quantity` and
    /// `original_purchase_date_ms` as strings; `expires_date` holds milliseconds (a string in
    /// `receipt`, a number in `latest_*_receipt_info`) next to `expires_date_formatted`.
    private static func ios6Transaction(_ t: SimTransaction, bundle: String, inLatest: Bool,
                                        refunds: [String: SimRefund]) -> JSONValue {
        var m: [(String, JSONValue)] = [
            ("bid", .string(bundle)),
            ("bvrs", .string("1")),
            ("item_id", .int(1_258_428_153)),
            ("quantity", .string(String(t.qty))),
            ("product_id", .string(t.pid)),
            ("transaction_id", Int64(t.tid).map { .int($0) } ?? .string(t.tid)),
            ("original_transaction_id", .string(t.otid)),
            ("purchase_date", .string(AppleDate.gmt(t.pd))),
            ("purchase_date_ms", .int(t.pd)),
            ("purchase_date_pst", .string(AppleDate.pst(t.pd))),
            ("original_purchase_date", .string(AppleDate.gmt(t.opd))),
            ("original_purchase_date_ms", .string(String(t.opd))),
            ("original_purchase_date_pst", .string(AppleDate.pst(t.opd))),
            ("is_trial_period", .string(t.trial ? "true" : "false")),
            ("unique_identifier", .string("4b59ff1e94ab8a1d48d856d733cd519d9c60bfbc")),
            ("unique_vendor_identifier", .string("E213C8E8-0754-47BF-AAD7-60246ADE00A7")),
        ]
        if let exp = t.exp {
            m.append(("expires_date", inLatest ? .int(exp) : .string(String(exp))))
            m.append(("expires_date_formatted", .string(AppleDate.gmt(exp))))
            m.append(("expires_date_formatted_pst", .string(AppleDate.pst(exp))))
        }
        if let wol = t.wol { m.append(("web_order_line_item_id", Int64(wol).map { .int($0) } ?? .string(wol))) }
        if let refund = refunds[t.tid] {
            m.append(("cancellation_date", .string(AppleDate.gmt(refund.cancellationDateMs))))
            m.append(("cancellation_date_ms", .int(refund.cancellationDateMs)))
            m.append(("cancellation_reason", Int64(refund.reason).map { .int($0) } ?? .string(refund.reason)))
        }
        return .object(m)
    }

    /// The receipt shows its first (not late) transaction; an auto-renewable adds its latest
    /// transaction as ONE object: `latest_receipt_info`, or `latest_expired_receipt_info` when the
    /// answer is 21006. Further transactions of the token are not visible in this style.
    private static func ios6(_ r: SimReceipt, status: Int, environment: AppStoreEnvironment, token: String,
                             refunds: [String: SimRefund]) -> [UInt8] {
        var top: [(String, JSONValue)] = [("status", .int(Int64(status))), ("environment", .string(envName(environment)))]
        let shown = r.txs.first(where: { $0.late != true }) ?? r.txs.first
        if let shown {
            top.append(("receipt", ios6Transaction(shown, bundle: r.bundle, inLatest: false, refunds: refunds)))
        } else {
            top.append(("receipt", .object([("bid", .string(r.bundle)), ("bvrs", .string("1"))])))
        }
        let subs = r.txs.filter(\.isAutoRenewable)
        if let latest = subs.max(by: { ($0.pd, $0.tid) < ($1.pd, $1.tid) }) {
            let info = ios6Transaction(latest, bundle: r.bundle, inLatest: true, refunds: refunds)
            if status == 21006 {
                top.append(("latest_expired_receipt_info", info))
            } else {
                top.append(("latest_receipt_info", info))
                top.append(("latest_receipt", .string(token)))
            }
            top.append(("auto_renew_status", .int(status == 21006 ? 0 : 1)))
            top.append(("auto_renew_product_id", .string(latest.pid)))
        }
        return JSONValue.object(top).bytes
    }
}
