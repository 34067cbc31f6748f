// Faults on demand: Google's errors, a timeout and bodies that are not Google's, for one endpoint
// or every call, drawn for a seeded share of the calls or given to the next N. The draw is a pure
// function of the seed, the rule, the endpoint and the call's number for that endpoint, so a run
// repeats exactly. A Google error refuses the call before its method runs; a timeout or a garbage
// body comes after it ran (a pull's messages leased, an acknowledgement or a review kept), as when
// the answer is lost on its way back.

/// A way Google's simulator misbehaves on one call.
public enum PlayFault: String, Sendable, CaseIterable {
    /// 401 UNAUTHENTICATED although the token is good (a stray 401).
    case unauthenticated = "401"
    /// 403 permissionDenied (the account lost its rights in Play Console).
    case forbidden = "403"
    /// 404 (productsv2: purchaseTokenNotFound; others NOT_FOUND).
    case notFound = "404"
    /// 410 purchaseTokenNoLongerValid.
    case gone = "410"
    /// 429 RESOURCE_EXHAUSTED.
    case rateLimited = "429"
    /// 500 INTERNAL.
    case internalError = "500"
    /// 503 UNAVAILABLE.
    case unavailable = "503"
    /// A timeout, as a proxy reports it: 504 with an HTML body.
    case timeout
    /// 200 with the real body cut in half.
    case truncated
    /// 200 with the real body and a byte in its first string made invalid UTF-8.
    case invalidUTF8 = "invalid-utf8"
    /// 200 with the real body inside a JSON array.
    case array
    /// 200 with the real body and a repeated key.
    case repeatedKey = "repeated-key"
    /// 200 with an HTML page.
    case html

    /// The five bodies that are not Google's (each answered 200).
    public static let garbage: [PlayFault] = [.truncated, .invalidUTF8, .array, .repeatedKey, .html]

    var isGarbage: Bool { Self.garbage.contains(self) }

    /// Whether the call's method runs (and changes what it changes) before the fault hides its answer.
    var reachesMethod: Bool { isGarbage || self == .timeout }
}

/// Which calls get which faults.
public struct PlayFaultPlan: Sendable, Equatable {
    /// One rule: the calls it applies to and the faults it gives.
    public struct Rule: Sendable, Equatable {
        /// nil: every call, the token endpoint's too.
        public var endpoint: PlayEndpoint?
        /// Drawn from (a seeded choice for a share, in turn for the next N calls).
        public var faults: [PlayFault]
        /// The share of the calls (0…1) faulted, drawn per call.
        public var share: Double
        /// When set, the next `count` calls are faulted (then the rule is spent); `share` is ignored.
        public var count: Int?

        /// A seeded `share` of the calls gets one of `faults`.
        public static func share(_ share: Double, of faults: [PlayFault], endpoint: PlayEndpoint? = nil) -> Rule {
            Rule(endpoint: endpoint, faults: faults, share: share, count: nil)
        }

        /// The next `count` calls get `faults` in turn (cycling when `count` is longer).
        public static func next(_ count: Int, _ faults: [PlayFault], endpoint: PlayEndpoint? = nil) -> Rule {
            Rule(endpoint: endpoint, faults: faults, share: 0, count: count)
        }
    }

    /// Seeds the draw of `share` rules.
    public var seed: UInt64
    /// Tried in order; the first that faults a call decides it.
    public var rules: [Rule]

    /// A plan; no rules, no faults.
    public init(seed: UInt64 = 0, rules: [Rule] = []) { (self.seed, self.rules) = (seed, rules) }
}

/// The fault plan's running state: how much of each `next` rule is spent.
struct PlayFaultState {
    var plan: PlayFaultPlan
    private var spent: [Int]

    init(_ plan: PlayFaultPlan) {
        self.plan = plan
        spent = Array(repeating: 0, count: plan.rules.count)
    }

    /// The fault for the `number`-th call (0-based) of `endpoint`, or nil.
    mutating func draw(_ endpoint: PlayEndpoint, number: Int) -> PlayFault? {
        for (r, rule) in plan.rules.enumerated() where !rule.faults.isEmpty && (rule.endpoint ?? endpoint) == endpoint {
            if let count = rule.count {
                guard spent[r] < count else { continue }
                defer { spent[r] += 1 }
                return rule.faults[spent[r] % rule.faults.count]
            }
            let h = Self.hash(plan.seed, UInt64(r), Self.fnv(endpoint.rawValue), UInt64(number))
            guard Double(h >> 11) / Double(UInt64(1) << 53) < rule.share else { continue }
            return rule.faults[Int(Self.mix(h ^ 0xFA17) % UInt64(rule.faults.count))]
        }
        return nil
    }

    /// SplitMix64's step.
    static func mix(_ x0: UInt64) -> UInt64 {
        var z = x0 &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    static func hash(_ values: UInt64...) -> UInt64 { values.reduce(0x1234_5678_9ABC_DEF1) { mix($0 ^ $1) } }

    /// FNV-1a 64.
    static func fnv(_ s: String) -> UInt64 {
        s.utf8.reduce(0xCBF2_9CE4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }
}

extension PlayFault {
    /// The answer this fault gives instead of `real` (the answer the call would have had).
    func answer(instead real: PlayAnswer, endpoint: PlayEndpoint) -> PlayAnswer {
        switch self {
        case .unauthenticated:
            return endpoint == .token
                ? GoogleError.oauth(401, "invalid_client", "Unauthorized") : GoogleError.unauthenticated
        case .forbidden:
            return endpoint == .token
                ? GoogleError.oauth(403, "access_denied", "Forbidden") : GoogleError.permissionDenied
        case .notFound:
            return endpoint == .productPurchase ? GoogleError.tokenNotFound : GoogleError.notFound("Not found.")
        case .gone: return GoogleError.tokenGone
        case .rateLimited: return GoogleError.rateLimited
        case .internalError: return GoogleError.internalError
        case .unavailable: return GoogleError.unavailable
        case .timeout: return GoogleError.gatewayTimeout
        case .truncated, .invalidUTF8, .array, .repeatedKey, .html:
            return PlayAnswer(
                status: 200, contentType: self == .html ? "text/html; charset=UTF-8" : real.contentType,
                body: garbageBody(from: real.status == 200 ? real.body : Array("{\"kind\":\"x\"}".utf8)))
        }
    }

    /// A body that is not Google's, made from a real one (an object).
    private func garbageBody(from body: [UInt8]) -> [UInt8] {
        switch self {
        case .truncated: return Array(body.prefix(max(1, body.count / 2)))
        case .invalidUTF8:
            // Inside the first string, where a strict reader checks UTF-8 (outside one, any byte
            // would be a syntax error instead).
            guard let quote = body.firstIndex(of: UInt8(ascii: "\"")) else { return body + [0xFF] }
            var out = body
            out.insert(contentsOf: [0xC3, 0x28], at: quote + 1)
            return out
        case .array: return [UInt8(ascii: "[")] + body + [UInt8(ascii: "]")]
        case .repeatedKey:
            guard body.first == UInt8(ascii: "{") else { return body }
            return Array("{\"kind\":\"a\",\"kind\":\"a\",".utf8) + body.dropFirst()
        default:
            return Array(
                "<!DOCTYPE html><html><head><title>Error 502 (Server Error)</title></head><body></body></html>".utf8)
        }
    }
}
