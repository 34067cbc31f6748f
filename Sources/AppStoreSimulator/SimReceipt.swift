// The opaque receipt token the generator issues and the simulator reads.
//
// `receipt_data` = standard base64 of a compact JSON object (a "SimReceipt"):
//   {"rid":"R…","env":"production"|"sandbox","bundle":"com.example.game","style":"ios7"|"ios6",
//    "st":21003 (optional forced status),
//    "txs":[{"tid":"…","otid":"…","pid":"…","qty":1,"pd":<ms>,"opd":<ms>,"exp":<ms, optional>,
//            "wol":"…" (optional),"trial":false,"type":"consumable|…","late":true (optional)}]}
// The truth about a purchase lives inside the token, so the simulator needs no database.

import Foundation
import Reconciliation

/// One Apple transaction inside a simulated receipt.
public struct SimTransaction: Codable, Sendable, Equatable {
    /// transaction_id
    public var tid: String
    /// original_transaction_id
    public var otid: String
    /// product_id
    public var pid: String
    /// quantity
    public var qty: Int
    /// purchase_date, epoch ms
    public var pd: Int64
    /// original_purchase_date, epoch ms
    public var opd: Int64
    /// expires_date, epoch ms (subscriptions)
    public var exp: Int64?
    /// web_order_line_item_id (auto-renewables)
    public var wol: String?
    /// is_trial_period
    public var trial: Bool
    /// product type: consumable, non_consumable, auto_renewable, non_renewing
    public var type: String
    /// The transaction happened after the receipt was issued (a later renewal): it shows only in
    /// `latest_receipt_info` (iOS 7) / as the latest transaction (iOS 6), never in `receipt.in_app`.
    public var late: Bool?

    public init(tid: String, otid: String, pid: String, qty: Int = 1, pd: Int64, opd: Int64? = nil,
                exp: Int64? = nil, wol: String? = nil, trial: Bool = false, type: String, late: Bool? = nil) {
        self.tid = tid
        self.otid = otid
        self.pid = pid
        self.qty = qty
        self.pd = pd
        self.opd = opd ?? pd
        self.exp = exp
        self.wol = wol
        self.trial = trial
        self.type = type
        self.late = late
    }

    public var isAutoRenewable: Bool { type == ProductType.autoRenewable.rawValue }
}

/// A simulated App Store receipt: what Apple would know about one uploaded receipt.
public struct SimReceipt: Codable, Sendable, Equatable {
    public enum Style: String, Codable, Sendable { case ios7, ios6 }

    /// Simulator receipt id (the generator uses the `iap_receipts.receipt_id`).
    public var rid: String
    /// "production" or "sandbox"
    public var env: String
    /// bundle_id (bid in iOS 6 style)
    public var bundle: String
    public var style: Style
    /// A forced answer status (21003, 21010, 21002, 21006, 211xx…); nil → 0.
    public var st: Int?
    public var txs: [SimTransaction]

    public init(rid: String, env: AppStoreEnvironment, bundle: String, style: Style, st: Int? = nil,
                txs: [SimTransaction]) {
        self.rid = rid
        self.env = env.rawValue
        self.bundle = bundle
        self.style = style
        self.st = st
        self.txs = txs
    }

    public var environment: AppStoreEnvironment? { AppStoreEnvironment(rawValue: env) }

    // MARK: - Token encoding

    /// The compact JSON text (hand-written, stable key order; `JSONDecoder` reads it back).
    public func json() -> String {
        var o = "{\"rid\":" + SimJSON.quote(rid) + ",\"env\":" + SimJSON.quote(env) + ",\"bundle\":"
            + SimJSON.quote(bundle) + ",\"style\":\"" + style.rawValue + "\""
        if let st { o += ",\"st\":" + String(st) }
        o += ",\"txs\":["
        for (i, t) in txs.enumerated() {
            if i > 0 { o += "," }
            o += "{\"tid\":" + SimJSON.quote(t.tid) + ",\"otid\":" + SimJSON.quote(t.otid) + ",\"pid\":"
                + SimJSON.quote(t.pid) + ",\"qty\":" + String(t.qty) + ",\"pd\":" + String(t.pd) + ",\"opd\":"
                + String(t.opd)
            if let exp = t.exp { o += ",\"exp\":" + String(exp) }
            if let wol = t.wol { o += ",\"wol\":" + SimJSON.quote(wol) }
            o += ",\"trial\":" + (t.trial ? "true" : "false") + ",\"type\":" + SimJSON.quote(t.type)
            if let late = t.late { o += ",\"late\":" + (late ? "true" : "false") }
            o += "}"
        }
        return o + "]}"
    }

    /// The `receipt_data` an app would upload: standard base64 of `json()`.
    public func token() -> String {
        Data(json().utf8).base64EncodedString()
    }

    /// Reads a token back; nil when `receiptData` is not base64 of a SimReceipt.
    public static func decode(token receiptData: String) -> SimReceipt? {
        guard let data = Data(base64Encoded: receiptData, options: [.ignoreUnknownCharacters]) ?? Data(
            base64Encoded: receiptData) else { return nil }
        guard data.first == UInt8(ascii: "{") else { return nil }
        return try? JSONDecoder().decode(SimReceipt.self, from: data)
    }
}

/// Tiny JSON text helpers shared by the token and the rendered answers.
enum SimJSON {
    /// Appends `s` as a JSON string literal; plain text (the common case) is copied as is.
    static func appendQuoted(_ s: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var plain = true
        for b in s.utf8 where b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") {
            plain = false
            break
        }
        if plain {
            out.append(contentsOf: s.utf8)
            out.append(UInt8(ascii: "\""))
        } else {
            out.removeLast()
            out.append(contentsOf: quote(s).utf8)
        }
    }

    static func quote(_ s: String) -> String { JSONText.quote(s) }
}
