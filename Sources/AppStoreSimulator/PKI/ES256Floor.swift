// `iap-sim es256-floor`: how many ES256 (P-256 ECDSA with SHA-256) signatures swift-crypto, the
// library the job verifies with, checks per second on every core of this machine: the floor of
// `make bench-sk2`. Distinct signatures by one key (a night's uploads are one app's
// leaf key signing different transactions), each over a message the size of a signed
// transaction's signing input (`header.payload`, about 3.6 KB with the three certificates of `x5c`;
// the benchmark passes its uploads' mean), checked in turn on `threads` threads. One signature
// checked again and again (`signatures: 1`) is about 4% faster on this machine than 1,024 in
// turn: the variable-time parts of the check (the modular inverse, the recoding of the scalars)
// take the same branches every time and the predictor learns them, which no night's uploads allow.

import Crypto
import Dispatch
import Foundation
import Synchronization

public enum ES256Floor {
    public struct Result: Sendable {
        public var verifications: Int
        public var seconds: Double
        /// CPU seconds of this process (user + system) while verifying.
        public var cpuSeconds: Double
        public var threads: Int
        /// Distinct signatures checked in turn.
        public var signatures: Int

        public var perSecond: Double { Double(verifications) / seconds }
        public var cpuPerThousand: Double { cpuSeconds / Double(verifications) * 1000 }
    }

    public static func measure(seconds: Double, threads: Int, messageBytes: Int = 3_600, signatures: Int = 1_024) throws -> Result {
        let key = P256.Signing.PrivateKey()
        let publicKey = key.publicKey
        // Distinct messages (each differs from the next in every byte), signed before the clock starts.
        let messages = (0..<signatures).map { k in
            Data((0..<messageBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7 &+ k) })
        }
        let signed = try messages.map { try key.signature(for: $0) }
        for (message, signature) in zip(messages, signed) where !publicKey.isValidSignature(signature, for: message) {
            throw CocoaError(.coderInvalidValue)
        }
        return time(seconds: seconds, threads: threads, signatures: signatures) { k in
            publicKey.isValidSignature(signed[k], for: messages[k])
        }
    }

    /// Checks signature `k` of `signatures`, in turn from a different place on each of `threads`
    /// threads, for `seconds`: the loop both floors time (RSAFloor.swift).
    static func time(seconds: Double, threads: Int, signatures: Int, check: @Sendable (Int) -> Bool) -> Result {
        let total = Atomic<Int>(0)
        let cpuBefore = cpuNow()
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            // Each thread starts elsewhere in the list and goes round it.
            var n = 0, next = thread * signatures / max(1, threads)
            while true {
                for _ in 0..<64 {
                    if check(next) { n += 1 }
                    next = next + 1 == signatures ? 0 : next + 1
                }
                if DispatchTime.now().uptimeNanoseconds >= end { break }
            }
            total.add(n, ordering: .relaxed)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Result(verifications: total.load(ordering: .relaxed), seconds: elapsed, cpuSeconds: cpuNow() - cpuBefore,
                      threads: threads, signatures: signatures)
    }

    static func cpuNow() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
