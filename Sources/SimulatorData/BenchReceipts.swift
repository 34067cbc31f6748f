// `iap-sim bench-receipts`: unresolved app receipts for `make bench-receipts`, as PKCS#7 signed by
// the receipt PKI (SimReceiptPKCS7.swift), written as COPY text rows of `iap_receipts`. A game's
// receipts hold one or two purchases mostly (a consumable receipt is issued per purchase); a few
// hold up to 20, and `entries` gives every receipt the same count (the 200-entry receipts of an
// old non-consumable shop). Every 500th receipt has its signature broken: the verdicts must say so.

import AppStoreSimulator
import Dispatch
import Foundation
import Reconciliation

public enum BenchReceipts {
    /// What was written.
    public struct Made: Sendable {
        public var receipts = 0
        public var entries = 0
        public var broken = 0
        /// Entries of the receipts whose signature is good: the transactions the night must learn.
        public var entriesValid = 0
        /// Mean signed content (payload) size in bytes, for the floor.
        public var meanPayloadBytes = 0
    }

    /// A game's look: 60% one purchase, 28% two, 6% three, 2% four, 4% five to twenty (mean 1.92).
    public static func gameEntries(_ i: Int, seed: UInt64) -> Int {
        let h = SimHash.combine(seed, UInt64(i), 0xB3C7, 0)
        let u = Double(h % 10_000) / 10_000
        switch u {
        case ..<0.60: return 1
        case ..<0.88: return 2
        case ..<0.94: return 3
        case ..<0.96: return 4
        default: return 5 + Int((h >> 20) % 16)
        }
    }

    /// Writes `count` receipt rows to `out`; receipt ids `<prefix><i>`, users `U<prefix><i>`,
    /// transaction ids from `firstTransaction` on. Signed on every core, written in order.
    public static func write(
        count: Int, entries fixed: Int?, pki: ReceiptPKI, bundle: String, product: String, asOf: Int64, prefix: String,
        firstTransaction: Int64, seed: UInt64, to out: FileHandle
    ) throws -> Made {
        var made = Made()
        var payloadBytes = 0
        let chunk = 2_048
        var start = 0
        var nextTransaction = firstTransaction
        let submitted = UTC.timestampMillis(asOf - 3_600_000)
        while start < count {
            let n = min(chunk, count - start)
            var receipts: [(SimReceipt, Bool)] = []
            for k in 0..<n {
                let i = start + k
                let entries = fixed ?? gameEntries(i, seed: seed)
                var txs: [SimTransaction] = []
                for e in 0..<entries {
                    let tid = String(nextTransaction)
                    nextTransaction += 1
                    let pd = asOf - 86_400_000 - Int64(i) * 1_000 - Int64(e) * 60_000
                    txs.append(SimTransaction(tid: tid, otid: tid, pid: product, pd: pd, type: ProductType.consumable.rawValue))
                }
                let broken = i % 500 == 499
                receipts.append((SimReceipt(rid: prefix + String(i), env: .production, bundle: bundle, style: .ios7,
                                            st: broken ? 21003 : nil, txs: txs), broken))
                made.entries += entries
                if broken { made.broken += 1 } else { made.entriesValid += entries }
            }
            let signed = Slots(n)
            let failure = SimFailure()
            let all = receipts
            DispatchQueue.concurrentPerform(iterations: n) { k in
                do {
                    let (receipt, broken) = all[k]
                    let payload = try receipt.receiptPayload()
                    var bytes = try pki.sign(payload, digest: .sha256)
                    if broken { bytes[bytes.count - 1] ^= 0x01 }
                    signed.set(k, (Data(bytes).base64EncodedString(), payload.count))
                } catch {
                    failure.set(error)
                }
            }
            if let error = failure.error { throw error }
            var text = ""
            for k in 0..<n {
                let i = start + k
                let (data, payload) = signed.get(k)
                text += "\(prefix)\(i)\tU\(prefix)\(i)\t\\N\t\\N\t\(data)\t\(submitted)\t\\N\n"
                payloadBytes += payload
            }
            out.write(Data(text.utf8))
            made.receipts += n
            start += n
        }
        made.meanPayloadBytes = made.receipts == 0 ? 0 : payloadBytes / made.receipts
        return made
    }
}

/// The first error of a concurrent loop.
private final class SimFailure: @unchecked Sendable {
    private let lock = NSLock()
    private var first: Error?
    var error: Error? { lock.withLock { first } }
    func set(_ e: Error) { lock.withLock { if first == nil { first = e } } }
}

/// One slot per receipt, each written by one iteration of a concurrent loop and read after it
/// (through a pointer: no exclusive access of a property is claimed while another thread writes).
private final class Slots: @unchecked Sendable {
    private let values: UnsafeMutableBufferPointer<(String, Int)>
    init(_ n: Int) {
        values = .allocate(capacity: n)
        values.initialize(repeating: ("", 0))
    }
    deinit {
        values.deinitialize()
        values.deallocate()
    }
    func set(_ k: Int, _ value: (String, Int)) { values[k] = value }
    func get(_ k: Int) -> (String, Int) { values[k] }
}
