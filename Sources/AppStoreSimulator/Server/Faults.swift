// Seeded, reproducible faults: the choice for a call is a pure function of
// (seed, receipt id, the n-th call for that receipt id).

/// A way the simulated App Store misbehaves.
public enum SimFault: String, CaseIterable, Sendable {
    /// Hold the request `timeoutHoldMs`, then close the connection without an answer.
    case timeout
    /// HTTP 503 (text body).
    case http5xx
    /// HTTP 429 with `Retry-After: 1`.
    case http429
    /// Close the connection at once with no answer (SO_LINGER 0 → TCP RST).
    case reset
    /// Headers with the full Content-Length, half the body, then close.
    case truncated
    /// HTTP 200 with an HTML body.
    case nonjson
    /// `{"status":21005}` (receipt server temporarily unavailable).
    case s21005
    /// `{"status":21009}` (internal data access error).
    case s21009
    /// `{"status":211xx,"is_retryable":true}` (the key is `is-retryable` on half the answers).
    case s211xx

    /// Parses `timeout,http5xx,…` or `all`.
    public static func parseList(_ text: String) -> [SimFault]? {
        let trimmed = text.trimmingSpaces()
        if trimmed.isEmpty || trimmed == "all" { return SimFault.allCases }
        var out: [SimFault] = []
        for part in trimmed.split(separator: ",") {
            guard let f = SimFault(rawValue: part.trimmingSpaces()) else { return nil }
            if !out.contains(f) { out.append(f) }
        }
        return out
    }
}

/// SplitMix64 step and string hashing, stable across platforms and runs.
public enum SimHash {
    public static func mix(_ x0: UInt64) -> UInt64 {
        var z = x0 &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// FNV-1a 64 over UTF-8.
    public static func fnv(_ s: String) -> UInt64 {
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in s.utf8 {
            h ^= UInt64(b)
            h = h &* 0x0000_0100_0000_01B3
        }
        return h
    }

    public static func combine(_ values: UInt64...) -> UInt64 {
        var h: UInt64 = 0x1234_5678_9ABC_DEF1
        for v in values { h = mix(h ^ v) }
        return h
    }

    /// Uniform in [0, 1).
    public static func unit(_ h: UInt64) -> Double {
        Double(h >> 11) / Double(1 << 53)
    }
}

/// The fault plan of a simulator.
public struct FaultPlan: Sendable, Equatable {
    public var seed: UInt64
    public var rate: Double
    public var kinds: [SimFault]

    public init(seed: UInt64 = 0, rate: Double = 0, kinds: [SimFault] = SimFault.allCases) {
        self.seed = seed
        self.rate = rate
        self.kinds = kinds
    }

    /// The fault for the `callIndex`-th call (0-based) for `receiptID`, or nil to answer normally.
    public func fault(receiptID: String, callIndex: Int) -> SimFault? {
        guard rate > 0, !kinds.isEmpty else { return nil }
        let h = SimHash.combine(seed, SimHash.fnv(receiptID), UInt64(callIndex))
        guard SimHash.unit(h) < rate else { return nil }
        return kinds[Int(SimHash.mix(h ^ 0xFA17) % UInt64(kinds.count))]
    }

    /// The 211xx status of a fault or forced status, and whether to spell the key `is-retryable`.
    static func retryableDetails(receiptID: String, callIndex: Int, seed: UInt64) -> (status: Int, dashed: Bool) {
        let h = SimHash.combine(seed, SimHash.fnv(receiptID), UInt64(callIndex), 211)
        return (21100 + Int(h % 100), (h >> 32) & 1 == 1)
    }
}
