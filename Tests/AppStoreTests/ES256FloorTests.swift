// `iap-sim es256-floor`, make bench-sk2's yardstick: it counts only checks that pass,
// over the distinct signatures it was asked for.

import Testing
@testable import AppStoreSimulator

struct ES256FloorTests {
    @Test("distinct signatures, checked in turn on every thread: every check counted passes, the CPU is measured")
    func distinctSignatures() throws {
        let r = try ES256Floor.measure(seconds: 0.2, threads: 2, messageBytes: 300, signatures: 16)
        #expect(r.signatures == 16)
        #expect(r.threads == 2)
        // Two threads for 0.2 s on any machine that runs the job verify far more than 16.
        #expect(r.verifications > 16)
        #expect(r.seconds >= 0.2 && r.seconds < 5)
        #expect(r.cpuSeconds > 0)
        #expect(r.cpuPerThousand > 0 && r.cpuPerThousand < 10)
    }

    @Test("one signature again and again is still a floor (the old yardstick, kept for comparison)")
    func oneSignature() throws {
        let r = try ES256Floor.measure(seconds: 0.1, threads: 1, messageBytes: 1, signatures: 1)
        #expect(r.signatures == 1 && r.verifications > 1)
    }
}
