// `iap-sim es256-floor`: how many ES256 (P-256 ECDSA with SHA-256) signatures swift-crypto, the
// library the job verifies with, checks per second on every core of this machine: the floor of
// `make bench-sk2` (issue 33). One signature over a message the size of a signed transaction's
// signing input (`header.payload`, about 3.6 KB with the three certificates of `x5c`; the
// benchmark passes its uploads' mean), checked again and again on `threads` threads.

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

        public var perSecond: Double { Double(verifications) / seconds }
        public var cpuPerThousand: Double { cpuSeconds / Double(verifications) * 1000 }
    }

    public static func measure(seconds: Double, threads: Int, messageBytes: Int = 3_600) throws -> Result {
        let key = P256.Signing.PrivateKey()
        let message = Data((0..<messageBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let signature = try key.signature(for: message)
        let publicKey = key.publicKey
        guard publicKey.isValidSignature(signature, for: message) else { throw CocoaError(.coderInvalidValue) }
        let total = Atomic<Int>(0)
        let cpuBefore = cpuNow()
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        DispatchQueue.concurrentPerform(iterations: threads) { _ in
            var n = 0
            while true {
                for _ in 0..<64 where publicKey.isValidSignature(signature, for: message) { n += 1 }
                if DispatchTime.now().uptimeNanoseconds >= end { break }
            }
            total.add(n, ordering: .relaxed)
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Result(verifications: total.load(ordering: .relaxed), seconds: elapsed, cpuSeconds: cpuNow() - cpuBefore,
                      threads: threads)
    }

    static func cpuNow() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
