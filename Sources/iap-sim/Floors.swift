// `iap-sim es256-floor` and `iap-sim rsa-floor`: the signature checks swift-crypto does per second
// on every core of this machine, the floors of `make bench-sk2` and `make bench-receipts`.

import AppStoreSimulator
import ArgumentParser
import Foundation

/// What both floors are measured over.
struct FloorOptions: ParsableArguments {
    @Option(help: "How long to measure, in seconds.")
    var seconds: Double = 3

    @Option(help: "Threads (default: the machine's cores).")
    var threads: Int = ProcessInfo.processInfo.activeProcessorCount

    @Option(help: "Distinct signatures (and messages) checked in turn, 1 to 65536.")
    var signatures: Int = 1_024

    func validate(messageBytes: Int) throws {
        guard seconds > 0, seconds <= 60 else { throw ValidationError("--seconds must be above 0 and at most 60") }
        guard threads >= 1, threads <= 256 else { throw ValidationError("--threads must be 1 to 256") }
        guard messageBytes >= 1, messageBytes <= 1 << 20 else { throw ValidationError("--message-bytes must be 1 to 1048576") }
        guard signatures >= 1, signatures <= 65_536 else { throw ValidationError("--signatures must be 1 to 65536") }
        guard messageBytes * signatures <= 1 << 28 else {
            throw ValidationError("--message-bytes x --signatures must be at most 268435456 (the messages are kept in memory)")
        }
    }

    /// The line both commands print: `<name> verifications/s R cpu_per_1000 C threads T signatures N`.
    static func line(_ name: String, _ r: ES256Floor.Result) -> String {
        String(format: "\(name) verifications/s %.0f cpu_per_1000 %.4f threads %d signatures %d",
               r.perSecond, r.cpuPerThousand, r.threads, r.signatures)
    }
}

/// `make bench-sk2`'s floor: swift-crypto's ES256 verification rate on every core.
struct ES256FloorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "es256-floor",
        abstract: "Measure how many ES256 signatures swift-crypto verifies per second on every core (make bench-sk2's floor).",
        discussion: "Prints `es256 verifications/s R cpu_per_1000 C threads T signatures N`: N distinct P-256 "
            + "signatures by one key, each over --message-bytes bytes (a signed transaction's signing input: make "
            + "bench-sk2 passes the uploads' mean), checked in turn on T threads. --signatures 1 checks one signature "
            + "again and again, which the branch predictor learns (about 4% faster here); a night's uploads are all "
            + "distinct.")

    @OptionGroup var floor: FloorOptions

    @Option(help: "Bytes signed, as in a JWS's `header.payload` (SHA-256 hashes them on every check).")
    var messageBytes: Int = 3_600

    func validate() throws { try floor.validate(messageBytes: messageBytes) }

    func run() throws {
        print(FloorOptions.line("es256", try ES256Floor.measure(
            seconds: floor.seconds, threads: floor.threads, messageBytes: messageBytes, signatures: floor.signatures)))
    }
}

/// `make bench-receipts`' floor: swift-crypto's RSA-2048 verification rate on every core.
struct RSAFloorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rsa-floor",
        abstract: "Measure how many RSA-2048 signatures swift-crypto verifies per second on every core (make bench-receipts' floor).",
        discussion: "Prints `rsa2048 verifications/s R cpu_per_1000 C threads T signatures N`: N distinct RSA-2048 "
            + "PKCS#1 v1.5 signatures with SHA-256 by one key, each over --message-bytes bytes (an app receipt's signed "
            + "content: make bench-receipts passes its receipts' mean), checked in turn on T threads.")

    @OptionGroup var floor: FloorOptions

    @Option(help: "Bytes signed, as a receipt's payload (SHA-256 hashes them on every check).")
    var messageBytes: Int = 300

    func validate() throws { try floor.validate(messageBytes: messageBytes) }

    func run() throws {
        print(FloorOptions.line("rsa2048", try RSAFloor.measure(
            seconds: floor.seconds, threads: floor.threads, messageBytes: messageBytes, signatures: floor.signatures)))
    }
}
