import AppStore
import JobStore

/// What `iap-reconcile lookup` was asked about.
public enum LookupTarget: Sendable, Equatable {
    /// The order ID on Apple's invoice e-mail (`MK5TTTVWJH`): Look Up Order ID.
    case order(String)
    /// A transaction id: Get Transaction Info (production, then the sandbox on 4040010).
    case transaction(String)
    /// Our `iap_orders.order_id` (`--our-order`): the Apple transactions our data ties to it.
    case ourOrder(String)
    /// Our user id (`--user`): the user's purchases of the last `days` days by our data.
    case user(String, days: Int)
    /// Google Play's order id (`GPA.3312-4420-1234-56789`, the player's Google receipt e-mail).
    case playOrder(String)
    /// A Google Play purchase token (`--token`).
    case playToken(String)

    /// The longest id of ours `lookup` takes (bytes of UTF-8): ids are keys, not texts.
    public static let maxOurIDBytes = 200
    /// `--days` takes 1 to this many days.
    public static let maxDays = 3_660

    /// Checked before anything is asked: an order ID is letters and digits, a transaction id
    /// digits, an id of ours 1 to 200 bytes with no control character (exit 64 otherwise).
    /// `days`: `--days`, for `--user` only (nil: the night's window, `windowDays`).
    public static func parse(
        orderID: String?, transactionID: String?, ourOrder: String? = nil, user: String? = nil,
        days: Int? = nil, windowDays: Int = 30, token: String? = nil
    ) throws -> LookupTarget {
        if days != nil, user == nil { throw JobError(.usage, "--days goes with --user") }
        if let token {
            guard orderID == nil, transactionID == nil, ourOrder == nil, user == nil else {
                throw JobError(.usage, "give one of: an order ID, --transaction ID, --token TOKEN, --our-order ID, --user ID")
            }
            guard (1...2048).contains(token.utf8.count), token.utf8.allSatisfy(isTokenByte) else {
                throw JobError(.usage, "'\(shown(token))' is not a Google Play purchase token (1 to 2,048 letters, digits, '.', '-', '_')")
            }
            return .playToken(token)
        }
        if let o = orderID, o.hasPrefix("GPA.") {
            guard transactionID == nil, ourOrder == nil, user == nil else {
                throw JobError(.usage, "give one of: an order ID, --transaction ID, --token TOKEN, --our-order ID, --user ID")
            }
            guard o.utf8.count <= 64, o.utf8.dropFirst(4).allSatisfy({ isDigit($0) || $0 == 45 }), o.utf8.count > 4 else {
                throw JobError(
                    .usage,
                    "'\(shown(o))' is not a Google Play order ID (GPA. then digits and '-', as on Google's receipt: GPA.3312-4420-1234-56789)"
                )
            }
            return .playOrder(o)
        }
        switch (orderID, transactionID, ourOrder, user) {
        case (let o?, nil, nil, nil):
            guard ServerAPI.isPathSafe(o), o.utf8.count <= 32 else {
                throw JobError(
                    .usage,
                    "'\(shown(o))' is not an Apple order ID (letters and digits, as on the invoice: MK5TTTVWJH); "
                        + "for our own order id use --our-order")
            }
            return .order(o)
        case (nil, let t?, nil, nil):
            guard !t.isEmpty, t.utf8.count <= 20, t.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                throw JobError(.usage, "'\(shown(t))' is not a transaction id (1 to 20 digits)")
            }
            return .transaction(t)
        case (nil, nil, let o?, nil):
            return .ourOrder(try ourID(o, "--our-order", what: "an order id of ours (iap_orders.order_id)"))
        case (nil, nil, nil, let u?):
            let n = days ?? windowDays
            guard (1...maxDays).contains(n) else { throw JobError(.usage, "--days \(n): give 1 to \(maxDays) days") }
            return .user(try ourID(u, "--user", what: "a user id of ours (iap_orders.user_id)"), days: n)
        default:
            throw JobError(
                .usage,
                "give one of: an Apple order ID (the invoice's) or Google Play's (GPA.…), --transaction ID, --token TOKEN, "
                    + "--our-order ID, --user ID")
        }
    }

    /// An id of ours as given, or exit 64: not empty, at most `maxOurIDBytes` bytes, no control
    /// character (C0, DEL, C1), no bidirectional override (it would reorder the printed line), and
    /// valid UTF-8 (the command line turns invalid bytes into U+FFFD, which no id holds).
    static func ourID(_ id: String, _ option: String, what: String) throws -> String {
        guard !id.isEmpty else { throw JobError(.usage, "\(option): the id is empty; give \(what)") }
        guard id.utf8.count <= maxOurIDBytes else {
            throw JobError(.usage, "\(option): the id is \(id.utf8.count) bytes long, more than \(maxOurIDBytes): not \(what)")
        }
        if id.unicodeScalars.contains("\u{FFFD}") {
            throw JobError(.usage, "\(option): the id is not valid UTF-8: not \(what)")
        }
        if let bad = id.unicodeScalars.first(where: isHostile) {
            throw JobError(.usage, "\(option): the id holds the control character U+\(hex(bad)): not \(what)")
        }
        return id
    }

    static func isDigit(_ b: UInt8) -> Bool { b >= 48 && b <= 57 }

    /// A byte of a purchase token: a letter, digit, `.`, `-` or `_` (the night's check of Play's rows).
    static func isTokenByte(_ b: UInt8) -> Bool {
        isDigit(b) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 46 || b == 45 || b == 95
    }

    static func isHostile(_ c: Unicode.Scalar) -> Bool {
        c.value < 0x20 || (0x7F...0x9F).contains(c.value) || (0x202A...0x202E).contains(c.value)
            || (0x2066...0x2069).contains(c.value) || c.value == 0x200E || c.value == 0x200F
    }

    static func hex(_ c: Unicode.Scalar) -> String {
        let h = String(c.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }

    /// An id as a refusal quotes it: its first 40 characters, control characters as `?`.
    static func shown(_ id: String) -> String {
        String(String.UnicodeScalarView(id.unicodeScalars.prefix(40).map { isHostile($0) ? "?" : $0 }))
    }

    /// `order`, `transaction`, `our_order` or `user` (`--json` `asked`), and the id.
    public var asked: (kind: String, id: String) {
        switch self {
        case .order(let id): return ("order", id)
        case .transaction(let id): return ("transaction", id)
        case .ourOrder(let id): return ("our_order", id)
        case .user(let id, _): return ("user", id)
        case .playOrder(let id): return ("play_order", id)
        case .playToken(let id): return ("play_token", id)
        }
    }
}
