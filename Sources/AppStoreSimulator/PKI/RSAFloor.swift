// `iap-sim rsa-floor`: how many RSA-2048 PKCS#1 v1.5 signatures with SHA-256 swift-crypto, the
// library the job verifies app receipts with, checks per second on every core of this machine: the
// floor of `make bench-receipts`. Distinct signatures by one key (a night's receipts are signed by
// Apple's one receipt-signing leaf over different contents), each over a message the size of a
// receipt's signed content (the benchmark passes its receipts' mean), checked in turn on
// `threads` threads, as ES256Floor does for signed transactions.

import Crypto
import Foundation
import _CryptoExtras

public enum RSAFloor {
    public static func measure(
        seconds: Double, threads: Int, messageBytes: Int = 300, signatures: Int = 1_024
    ) throws -> ES256Floor.Result {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let publicKey = key.publicKey
        // Distinct messages, signed before the clock starts; the check hashes each, as the job does.
        let messages = (0..<signatures).map { k in
            Data((0..<messageBytes).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7 &+ k) })
        }
        let signed = try messages.map { try key.signature(for: SHA256.hash(data: $0), padding: .insecurePKCS1v1_5) }
        for (message, signature) in zip(messages, signed)
        where !publicKey.isValidSignature(signature, for: SHA256.hash(data: message), padding: .insecurePKCS1v1_5) {
            throw CocoaError(.coderInvalidValue)
        }
        return ES256Floor.time(seconds: seconds, threads: threads, signatures: signatures) { k in
            publicKey.isValidSignature(signed[k], for: SHA256.hash(data: messages[k]), padding: .insecurePKCS1v1_5)
        }
    }
}
