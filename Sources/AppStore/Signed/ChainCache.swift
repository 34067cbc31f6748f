// The chain verdicts of recent (leaf, intermediate) pairs.
//
// Why: a night may bring 100,000 signed transactions, nearly all from the same two Apple
// certificates. Building and judging the chain costs two P-384 signature checks and a few
// certificate parses per JWS (see docs in SignedDataVerifier); the verdict depends only on the
// two certificates and the configured roots, except for the dates. So the verdict is kept with
// the chain's validity periods, and each JWS still gets the exact date check at its own
// `signedDate` and its own signature check.

internal import Glibc
import Crypto
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
/// churn from hostile uploads, and letting it cycle keeps the memory bounded. Signed transactions
/// key it by (leaf, intermediate); app receipts by the certificates they carry.
final class ChainCache<Key: Hashable & Sendable, Entry: Sendable>: Sendable {
    private struct State {
        var entries: [Key: Entry] = [:]
        var order: [Key] = []
    }

    let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    func entry(_ key: Key) -> Entry? {
        guard capacity > 0 else { return nil }
        return state.withLock { $0.entries[key] }
    }

    func store(_ entry: Entry, for key: Key) {
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

/// The JWS headers seen lately, with the certificates they hold and, once judged, their chain's
/// verdict. Apple signs with a handful of leaf certificates, so nearly every upload repeats the
/// header of one before it: about 3.3 KB of base64url, two thirds of the JWS. A header whose bytes
/// equal a remembered one (compared with memcmp) is not decoded, scanned or hashed again: the same
/// bytes were read strictly once and gave these certificates, and the signing input's hash goes on
/// from the state its bytes left (SHA-256 is a stream: the digest is the same).
/// Only headers that parsed are remembered; at most `capacity` (the oldest leaves first), so
/// hostile uploads with ever new headers cost one comparison each and no memory.
final class HeaderMemo: Sendable {
    /// Immutable, found by reference: the verifier threads share the memo, and handing out a
    /// reference is one retain where a copy of the entry (and of the list) took several, each on
    /// a count the other core was changing too. A chain's verdict replaces the entry.
    final class Entry: Sendable {
        let header: [UInt8]
        let certificates: [[UInt8]]
        let chain: ChainCacheEntry?
        /// SHA-256 fed with the header's bytes and not finalized: the signing input starts with
        /// them, so a JWS with this header hashes only `.payload` (its state is copied on update).
        let headerHash: SHA256

        init(header: [UInt8], certificates: [[UInt8]], chain: ChainCacheEntry?, headerHash: SHA256) {
            (self.header, self.certificates, self.chain, self.headerHash) = (header, certificates, chain, headerHash)
        }
    }

    let capacity: Int
    private let entries = Mutex<[Entry]>([])

    init(capacity: Int = 8) { self.capacity = capacity }

    /// The entry whose header `jws` starts with, followed by a dot.
    func find(prefixOf jws: UnsafeBufferPointer<UInt8>) -> Entry? {
        guard capacity > 0, let base = jws.baseAddress else { return nil }
        return entries.withLock { seen in
            seen.first { entry in
                entry.header.count < jws.count && jws[entry.header.count] == UInt8(ascii: ".")
                    && entry.header.withUnsafeBufferPointer { memcmp($0.baseAddress!, base, $0.count) == 0 }
            }
        }
    }

    func remember(_ header: [UInt8], certificates: [[UInt8]]) {
        guard capacity > 0 else { return }
        entries.withLock { list in
            guard !list.contains(where: { $0.header == header }) else { return }
            var hash = SHA256()
            hash.update(data: header)
            list.append(Entry(header: header, certificates: certificates, chain: nil, headerHash: hash))
            if list.count > capacity { list.removeFirst() }
        }
    }

    func remember(_ chain: ChainCacheEntry, forHeader header: [UInt8]) {
        entries.withLock { list in
            if let i = list.firstIndex(where: { $0.header == header }) {
                let e = list[i]
                list[i] = Entry(header: e.header, certificates: e.certificates, chain: chain, headerHash: e.headerHash)
            }
        }
    }
}
