// Answer bodies that are not what Apple's verifyReceipt sends: the simulator's garbage mode
// (`iap-sim serve --garbage`) answers with them, and the parser's tests check that each one is
// classified `retry` with a problem naming what is wrong, never `ok`.
//
// Every body here stays well under the job's 4 MiB answer limit, so the job's HTTP layer hands
// each one to the parser as it is (the multi-megabyte cases live in the unit tests).

import Foundation

/// A list of garbage bodies, built in or read from a file.
public enum HostileAnswers {
    /// One garbage body.
    public struct Body: Sendable, Equatable {
        /// A short stable name, used in the simulator's call log (`garbage:<name>`).
        public var name: String
        public var bytes: [UInt8]
        /// Text the parser's problem must contain: the offending field, or what is wrong.
        public var mentions: String

        public init(name: String, bytes: [UInt8], mentions: String) {
            self.name = name
            self.bytes = bytes
            self.mentions = mentions
        }
    }

    // MARK: Building blocks

    /// An Apple-shaped iOS 7 transaction, members in order; values are raw JSON text.
    static let transactionMembers: [(String, String)] = [
        ("quantity", #""1""#),
        ("product_id", #""com.example.game.coins""#),
        ("transaction_id", #""1000000590401900""#),
        ("original_transaction_id", #""1000000590401900""#),
        ("purchase_date", #""2019-11-11 06:00:00 Etc/GMT""#),
        ("purchase_date_ms", #""1573452000000""#),
        ("purchase_date_pst", #""2019-11-10 22:00:00 America/Los_Angeles""#),
        ("original_purchase_date", #""2019-11-11 06:00:00 Etc/GMT""#),
        ("original_purchase_date_ms", #""1573452000000""#),
        ("is_trial_period", #""false""#),
    ]

    /// `{"k":v,…}` from raw member texts (keys inserted as given, so they may carry escapes).
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The transaction with `set` members replaced in place (or appended) and `remove` dropped.
    public static func transaction(set: [(String, String)] = [], remove: [String] = []) -> String {
        var members = transactionMembers.filter { !remove.contains($0.0) }
        for (key, value) in set {
            if let at = members.firstIndex(where: { $0.0 == key }) {
                members[at].1 = value
            } else {
                members.append((key, value))
            }
        }
        return object(members)
    }

    /// An iOS 7 style answer: `receipt.in_app`, optional `latest_receipt_info`.
    public static func ios7(status: String = "0", inApp: String? = nil, latest: String? = nil,
                            receipt: [(String, String)] = [], top: [(String, String)] = []) -> String {
        var r: [(String, String)] = [("receipt_type", #""Production""#), ("bundle_id", #""com.example.game""#),
                                     ("application_version", #""1""#)]
        r += receipt
        r.append(("in_app", inApp ?? "[\(transaction())]"))
        var t: [(String, String)] = [("status", status), ("environment", #""Production""#), ("receipt", object(r))]
        if let latest { t.append(("latest_receipt_info", latest)) }
        t.append(("latest_receipt", #""MIIUHwYJKoZIhvcNAQcCoIIUEDCCFAwCAQExCzAJBgUrDgMCGgUA""#))
        return object(t + top)
    }

    /// An iOS 6 style answer: the receipt is the transaction; `latest_*_info` one object each.
    public static func ios6(status: String = "0", receipt: String? = nil, latest: String? = nil,
                            expired: String? = nil) -> String {
        var t: [(String, String)] = [("status", status),
                                     ("receipt", receipt ?? transaction(set: [("bid", #""com.example.game""#)]))]
        if let latest { t.append(("latest_receipt_info", latest)) }
        if let expired { t.append(("latest_expired_receipt_info", expired)) }
        return object(t)
    }

    /// `text` with the first `marker` replaced by raw bytes (invalid UTF-8, NUL, …).
    static func splice(_ text: String, _ marker: String, _ bytes: [UInt8]) -> [UInt8] {
        var out = Array(text.utf8)
        let m = Array(marker.utf8)
        guard let at = (0...(out.count - m.count)).first(where: { Array(out[$0..<($0 + m.count)]) == m }) else {
            return out
        }
        out.replaceSubrange(at..<(at + m.count), with: bytes)
        return out
    }

    // MARK: The built-in list

    /// Every built-in garbage body.
    public static let all: [Body] = build()

    private static func build() -> [Body] {
        var list: [Body] = []
        func add(_ name: String, _ text: String, _ mentions: String) {
            list.append(Body(name: name, bytes: Array(text.utf8), mentions: mentions))
        }
        func add(_ name: String, _ bytes: [UInt8], _ mentions: String) {
            list.append(Body(name: name, bytes: bytes, mentions: mentions))
        }
        let marker = "@@RAW@@"

        // Not valid UTF-8, inside a string and between members.
        let badUTF8: [(String, [UInt8])] = [("ff", [0xFF]), ("overlong_c0af", [0xC0, 0xAF]),
                                            ("cesu_surrogate", [0xED, 0xA0, 0x80]), ("truncated_e282", [0xE2, 0x82])]
        for (label, bytes) in badUTF8 {
            add("utf8_\(label)_in_string",
                splice(ios7(inApp: "[\(transaction(set: [("product_id", "\"coins\(marker)x\"")]))]"), marker, bytes),
                "UTF-8")
            add("utf8_\(label)_outside", splice(ios7(top: [("x", "1")]).replacingFirst(",\"x\":1", with: ",\(marker)"),
                                                marker, bytes), "UTF-8")
        }
        add("utf8_escaped_lone_high", ios7(inApp: "[\(transaction(set: [("product_id", #""a\ud800b""#)]))]"), "surrogate")
        add("utf8_escaped_lone_low", ios7(inApp: "[\(transaction(set: [("product_id", #""a\udc00b""#)]))]"), "surrogate")
        add("utf8_escaped_high_then_letter", ios7(inApp: "[\(transaction(set: [("product_id", #""\ud800\u0041""#)]))]"),
            "surrogate")
        add("bom", [0xEF, 0xBB, 0xBF] + Array(ios7().utf8), "byte-order mark")

        // NUL bytes.
        add("nul_raw_in_string",
            splice(ios7(inApp: "[\(transaction(set: [("product_id", "\"a\(marker)b\"")]))]"), marker, [0]), "0x00")
        add("nul_raw_outside", splice(ios7().replacingFirst("{\"status\"", with: "{\(marker)\"status\""), marker, [0]),
            "0x00")
        add("nul_escaped_in_transaction_key",
            ios7(inApp: "[\(transaction(remove: ["transaction_id"]).replacingFirst("{", with: #"{"transaction_id\u0000":"1","#))]"),
            "in_app[0] has no transaction_id")
        add("nul_escaped_in_status_key", ios7().replacingFirst(#""status""#, with: #""status\u0000""#), "no status")
        add("nul_escaped_in_product_id", ios7(inApp: "[\(transaction(set: [("product_id", #""a\u0000b""#)]))]"),
            "in_app[0].product_id")

        // Not one JSON object.
        add("empty", "", "empty")
        add("whitespace", " \r\n\t ", "unexpected end")
        add("json_array", "[\(ios7())]", "array")
        add("json_string", #""status""#, "a string")
        add("json_null", "null", "null")
        add("json_true", "true", "boolean")
        add("json_number", "0", "a number")
        add("two_objects", ios7() + ios7(), "more data")
        add("html", "<html><head><title>503</title></head><body>Service Unavailable</body></html>", "not JSON")
        add("single_quotes", "{'status':0}", "not JSON")
        let whole = ios7(latest: "[\(transaction())]")
        for cut in [1, whole.utf8.count / 3, whole.utf8.count / 2, whole.utf8.count - 1] {
            add("truncated_at_\(cut)", Array(Array(whole.utf8)[0..<cut]), "body is not JSON")
        }
        add("nested_arrays_10000", String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000),
            "nesting deeper than 64")
        add("nested_objects_10000", String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000),
            "nesting deeper than 64")
        add("nested_65_in_unread_field",
            ios7(top: [("x", String(repeating: "[", count: 65) + String(repeating: "]", count: 65))]), "nesting deeper than 64")

        // Repeated keys.
        add("duplicate_status", ios7(top: [("status", "21010")]), "duplicate key status")
        add("duplicate_in_receipt", ios7(receipt: [("bundle_id", #""com.other.app""#)]), "duplicate key bundle_id")
        add("duplicate_in_transaction",
            ios7(inApp: "[\(transaction().replacingFirst("{", with: #"{"transaction_id":"1000000590409999","#))]"),
            "duplicate key transaction_id")
        add("duplicate_escaped_key", ios7(top: [(#"\u0073tatus"#, "21010")]), "duplicate key status")
        add("duplicate_deep_unread", ios7(top: [("x", #"{"y":[{"z":1,"z":2}]}"#)]), "duplicate key z")

        // status forms.
        for (label, raw) in [("minus_zero", "-0"), ("zero_point_zero", "0.0"), ("zero_e_zero", "0e0"), ("1E3", "1E3"),
                             ("21006.0", "21006.0"), ("2e4", "2e4"), ("minus_one", "-1"), ("huge", "99999999999999999999999"),
                             ("string_1e3", #""1e3""#), ("string_0x10", #""0x10""#), ("string_space_0", #"" 0""#),
                             ("string_0_space", #""0 ""#), ("string_21006_space", #""21006 ""#), ("string_empty", #""""#),
                             ("null", "null"), ("true", "true"), ("object", #"{"code":0}"#), ("array", "[0]")] {
            add("status_\(label)", ios7(status: raw), "status")
        }
        add("status_plus_one", ios7(status: "+1"), "not JSON")
        add("status_leading_zero", ios7(status: "01"), "not JSON")
        add("no_status", ios7().replacingFirst(#""status":0,"#, with: ""), "no status")
        for (label, raw) in [("maybe", #""maybe""#), ("upper_false", #""FALSE""#), ("two", "2"), ("null", "null")] {
            add("is_retryable_\(label)", #"{"status":21100,"is_retryable":\#(raw)}"#, "is_retryable")
            add("is-retryable_\(label)", #"{"status":21150,"is-retryable":\#(raw)}"#, "is-retryable")
        }
        add("status_21004_bad_flag", #"{"status":21004,"is_retryable":"no"}"#, "is_retryable")

        // Receipt and in_app shapes.
        add("no_receipt_0", #"{"status":0,"environment":"Production"}"#, "receipt is missing")
        add("no_receipt_21006", #"{"status":21006}"#, "receipt is missing")
        add("receipt_string", #"{"status":0,"receipt":"MIIT"}"#, "receipt is a string")
        add("receipt_array", #"{"status":0,"receipt":[]}"#, "receipt is an array")
        add("receipt_null", #"{"status":0,"receipt":null}"#, "receipt is null")
        add("receipt_without_in_app", #"{"status":0,"receipt":{"bundle_id":"com.example.game"}}"#, "in_app")
        add("receipt_escaped_nul_key", ios7().replacingFirst(#""receipt""#, with: #""receipt\u0000""#), "receipt is missing")
        add("in_app_string", ios7(inApp: #""1000000590401900""#), "in_app is a string")
        add("in_app_null", ios7(inApp: "null"), "in_app is null")
        add("in_app_number", ios7(inApp: "1000000590401900"), "in_app is a number")
        add("in_app_object", ios7(inApp: transaction()), "in_app is an object")
        add("in_app_element_string", ios7(inApp: #"["1000000590401900"]"#), "in_app[0] is a string")
        add("in_app_element_null", ios7(inApp: "[\(transaction()),null]"), "in_app[1] is null")
        add("in_app_element_number", ios7(inApp: "[\(transaction()),\(transaction()),\(transaction()),7]"),
            "in_app[3] is a number")
        add("in_app_element_array", ios7(inApp: "[[\(transaction())]]"), "in_app[0] is an array")
        add("ios7_latest_object", ios7(latest: transaction()), "latest_receipt_info is an object")
        add("ios7_latest_element_string", ios7(latest: #"["x"]"#), "latest_receipt_info[0] is a string")
        add("ios7_expired_object", ios7(top: [("latest_expired_receipt_info", transaction())]),
            "latest_expired_receipt_info is an object")
        add("ios6_latest_array", ios6(latest: "[\(transaction())]"), "latest_receipt_info is an array")
        add("ios6_expired_array", ios6(status: "21006", expired: "[\(transaction())]"),
            "latest_expired_receipt_info is an array")
        add("ios6_latest_string", ios6(latest: #""x""#), "latest_receipt_info is a string")
        add("ios6_with_in_app",
            ios6(receipt: transaction(set: [("bid", #""com.example.game""#), ("in_app", "[\(transaction())]")])), "in_app")

        // transaction_id and the other ids.
        let badIDs: [(String, String, String)] = [
            ("null", "null", "transaction_id is null"),
            ("30_digits", #""123456789012345678901234567890""#, "transaction_id has 30 digits"),
            ("30_digit_number", "123456789012345678901234567890", "transaction_id has 30 digits"),
            ("23_digit_number", "99999999999999999999999", "transaction_id has 23 digits"),
            ("exponent", "2.0000008e15", "transaction_id 2.0000008e15 is not an integer"),
            ("minus_one", "-1", "transaction_id -1 is not an integer"),
            ("minus_zero", "-0", "transaction_id -0 is not an integer"),
            ("fraction", "1.5", "transaction_id 1.5 is not an integer"),
            ("zero_point_zero", "0.0", "transaction_id 0.0 is not an integer"),
            ("1E3", "1E3", "transaction_id 1E3 is not an integer"),
            ("letters", #""12a""#, #"transaction_id "12a" is not an integer"#),
            ("empty", #""""#, "transaction_id is empty"),
            ("leading_space", #"" 12""#, #"transaction_id " 12" is not an integer"#),
            ("trailing_space", #""12 ""#, #"transaction_id "12 " is not an integer"#),
            ("string_1e3", #""1e3""#, #"transaction_id "1e3" is not an integer"#),
            ("string_0x10", #""0x10""#, #"transaction_id "0x10" is not an integer"#),
            ("true", "true", "transaction_id is a boolean"),
            ("object", "{}", "transaction_id is an object"),
            ("array", "[]", "transaction_id is an array"),
        ]
        for (label, raw, mentions) in badIDs {
            add("transaction_id_\(label)", ios7(inApp: "[\(transaction(set: [("transaction_id", raw)]))]"),
                "in_app[0]." + mentions)
        }
        add("transaction_id_plus_one", ios7(inApp: "[\(transaction(set: [("transaction_id", "+1")]))]"), "not JSON")
        add("transaction_id_leading_zero", ios7(inApp: "[\(transaction(set: [("transaction_id", "01")]))]"), "not JSON")
        add("transaction_id_missing", ios7(inApp: "[\(transaction()),\(transaction()),\(transaction(remove: ["transaction_id"]))]"),
            "in_app[2] has no transaction_id")
        add("ios6_transaction_id_null", ios6(receipt: transaction(set: [("transaction_id", "null")])),
            "receipt.transaction_id is null")
        add("ios6_latest_transaction_id_fraction", ios6(latest: transaction(set: [("transaction_id", "1.5")])),
            "latest_receipt_info.transaction_id")
        add("latest_missing_transaction_id", ios7(latest: "[\(transaction(remove: ["transaction_id"]))]"),
            "latest_receipt_info[0] has no transaction_id")
        add("original_transaction_id_null", ios7(inApp: "[\(transaction(set: [("original_transaction_id", "null")]))]"),
            "original_transaction_id is null")
        add("original_transaction_id_fraction",
            ios7(inApp: "[\(transaction(set: [("original_transaction_id", "1.5")]))]"), "original_transaction_id")
        add("web_order_line_item_id_letters",
            ios7(inApp: "[\(transaction(set: [("web_order_line_item_id", #""w7""#)]))]"), "web_order_line_item_id")
        add("web_order_line_item_id_21_digits",
            ios7(inApp: "[\(transaction(set: [("web_order_line_item_id", "100000000000000000000")]))]"), "web_order_line_item_id has 21")

        // quantity.
        for (label, raw) in [("zero", "0"), ("minus_one", "-1"), ("fraction", "1.5"), ("100001", "100001"),
                             ("string_0", #""0""#), ("many", #""many""#), ("null", "null"), ("true", "true")] {
            add("quantity_\(label)", ios7(inApp: "[\(transaction(set: [("quantity", raw)]))]"), "in_app[0].quantity")
        }

        // Dates.
        let badDates: [(String, String, String)] = [
            ("abc", #""abc""#, "purchase_date_ms"), ("negative", "-1", "purchase_date_ms"), ("exponent", "1e12", "purchase_date_ms"),
            ("null", "null", "purchase_date_ms is null"), ("huge", "99999999999999999", "purchase_date_ms"),
            ("year_10000", "253402300800000", "purchase_date_ms"), ("empty", #""""#, "purchase_date_ms"),
            ("fraction", "1573452000000.0", "purchase_date_ms"), ("space", #"" 1573452000000""#, "purchase_date_ms"),
        ]
        for (label, raw, mentions) in badDates {
            add("purchase_date_ms_\(label)", ios7(inApp: "[\(transaction(set: [("purchase_date_ms", raw)]))]"), mentions)
        }
        for (field, raw) in [("purchase_date", #""2019-11-10 22:00:00 America/Los_Angeles""#),
                             ("purchase_date", #""yesterday""#), ("original_purchase_date_ms", #""not a date""#),
                             ("expires_date", #""""#), ("expires_date_ms", "null"), ("expires_date_formatted", "1.5"),
                             ("cancellation_date_ms", "true"), ("cancellation_date", #""2019-13-01 00:00:00 Etc/GMT""#),
                             ("original_purchase_date", "{}")] {
            add("\(field)_\(list.count)", ios7(inApp: "[\(transaction(set: [(field, raw)]))]"), "in_app[0].\(field)")
        }

        // Texts and flags.
        for (field, raw) in [("product_id", "null"), ("product_id", "{}"), ("product_id", "[]"), ("product_id", "true"),
                             ("product_id", "1.5"), ("bid", "null"), ("bundle_id", "false"), ("cancellation_reason", #""x""#),
                             ("cancellation_reason", "null"), ("is_trial_period", #""TRUE""#),
                             ("is_trial_period", #""yes""#), ("is_trial_period", "2"), ("is_trial_period", "null")] {
            add("\(field)_\(list.count)", ios7(inApp: "[\(transaction(set: [(field, raw)]))]"), "in_app[0].\(field)")
        }
        add("receipt_bundle_id_null", ios7(receipt: [("bundle_id", "null")]).replacingFirst(#""bundle_id":"com.example.game","#, with: ""),
            "receipt.bundle_id is null")
        add("receipt_bid_object", ios6(receipt: transaction(set: [("bid", "{}")])), "receipt.bid is an object")
        return list
    }

    // MARK: A file of bodies

    /// Reads a garbage file: one body per line; `\xNN` (two hex digits) stands for any byte, every
    /// other byte is itself (so JSON escapes such as `\u0073` stay as they are); empty lines and
    /// lines starting with `#` are skipped. Bodies are named `line<N>`.
    public static func parseFile(_ data: [UInt8]) -> [Body] {
        var bodies: [Body] = []
        var lineNumber = 0
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            var raw = Array(line)
            if raw.last == 0x0D { raw.removeLast() }
            if raw.isEmpty || raw.first == UInt8(ascii: "#") { continue }
            var out: [UInt8] = []
            out.reserveCapacity(raw.count)
            var i = 0
            while i < raw.count {
                if raw[i] == UInt8(ascii: "\\"), i + 3 < raw.count, raw[i + 1] == UInt8(ascii: "x"),
                   let hi = hexValue(raw[i + 2]), let lo = hexValue(raw[i + 3]) {
                    out.append(hi << 4 | lo)
                    i += 4
                } else {
                    out.append(raw[i])
                    i += 1
                }
            }
            bodies.append(Body(name: "line\(lineNumber)", bytes: out, mentions: ""))
        }
        return bodies
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x41...0x46: return c - 0x41 + 10
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    /// The body for the `callIndex`-th call for `receiptID` (a pure function of seed, receipt id
    /// and call number, like the fault choice).
    public static func pick(_ bodies: [Body], seed: UInt64, receiptID: String?, callIndex: Int) -> Body? {
        guard !bodies.isEmpty else { return nil }
        let h = SimHash.combine(seed, SimHash.fnv(receiptID ?? "-"), UInt64(callIndex), 0x6A4B)
        return bodies[Int(h % UInt64(bodies.count))]
    }
}

extension String {
    /// The string with the first occurrence of `target` replaced (unchanged when absent).
    func replacingFirst(_ target: String, with replacement: String) -> String {
        guard let range = range(of: target) else { return self }
        return replacingCharacters(in: range, with: replacement)
    }
}
