// The chain verdicts of recent (leaf, intermediate) pairs.
//
// Why: a night may bring 100,000 signed transactions, nearly all from the same two Apple
// certificates. Building and judging the chain costs two P-384 signature checks and a few
// certificate parses per JWS (see docs in SignedDataVerifier); the verdict depends only on the
// two certificates and the configured roots, except for the dates. So the verdict is kept with
// the chain's validity periods, and each JWS still gets the exact date check at its own
// `signedDate` and its own signature check.

import Synchronization

/// The DER bytes of x5c[0] and x5c[1]. Hashed as raw bytes (an array's element-wise hash would
/// cost a few microseconds per certificate).
struct ChainKey: Hashable, Sendable {
    let leaf: [UInt8]
    let intermediate: [UInt8]

    func hash(into hasher: inout Hasher) {
        leaf.withUnsafeBytes { hasher.combine(bytes: $0) }
        intermediate.withUnsafeBytes { hasher.combine(bytes: $0) }
        hasher.combine(leaf.count)
    }
}

struct ChainCacheEntry: Sendable {
    let verdict: ChainVerdict
    /// The x5c[2] seen with this pair, known to parse as a certificate: the same bytes again need
    /// not be parsed again (x5c[2] is never trusted, but it must still be a certificate).
    let rootDER: [UInt8]
}

/// A bounded map of verdicts, safe to share between the job's verify threads. When full, the
/// oldest entry leaves first: a night sees a handful of pairs, so anything past `capacity` is
/// churn from hostile uploads, and letting it cycle keeps the memory bounded.
final class ChainCache: Sendable {
    private struct State {
        var entries: [ChainKey: ChainCacheEntry] = [:]
        var order: [ChainKey] = []
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    func entry(_ key: ChainKey) -> ChainCacheEntry? {
        guard capacity > 0 else { return nil }
        return state.withLock { $0.entries[key] }
    }

    func store(_ entry: ChainCacheEntry, for key: ChainKey) {
        guard capacity > 0 else { return }
        state.withLock { s in
            if s.entries.updateValue(entry, forKey: key) == nil {
                s.order.append(key)
                if s.order.count > capacity {
                    s.entries[s.order.removeFirst()] = nil
                }
            }
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
