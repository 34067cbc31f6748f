// `iap-sim bench-receipts`: the receipts of `make bench-receipts` (SimulatorData/BenchReceipts.swift).

import AppStoreSimulator
import ArgumentParser
import Foundation
import Reconciliation
import SimulatorData

struct BenchReceiptsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-receipts",
        abstract: "Write unresolved PKCS#7 app receipts as COPY rows of iap_receipts (make bench-receipts).",
        discussion: "Signed by the receipt PKI of --pki (created when missing). Each receipt holds --entries consumable "
            + "purchases, or with 0 a game's mix (mostly 1 or 2, at most 20, mean 1.92); every 500th has its signature "
            + "broken. Prints on stderr `receipts N entries E valid_entries V broken B mean_payload_bytes P`.")

    @Option(help: "Receipts to write.")
    var count = 50_000

    @Option(help: "Purchases per receipt, 1 to 10000 (0: a game's mix).")
    var entries = 0

    @Option(help: ArgumentHelp("Folder of the test PKI (the same as `iap-sim seed --pki`).", valueName: "folder"))
    var pki: String

    @Option(help: "The receipts' bundle id.")
    var bundle = "com.example.game"

    @Option(help: "The purchases' product id.")
    var product = "com.example.game.coins100"

    @Option(help: "The night's as-of (ISO 8601): receipts submitted an hour before, purchases a day and more before.")
    var asOf: String

    @Option(help: "Receipt ids are <prefix><n>, users U<prefix><n>.")
    var prefix = "RB"

    @Option(help: "The first transaction id (digits); each purchase takes the next.")
    var firstTransaction: Int64 = 3_000_000_000_000

    @Option(help: "Seed of the entries' mix.")
    var seed: UInt64 = 7

    @Option(help: ArgumentHelp("Where to write the rows (default: standard output).", valueName: "file"))
    var out: String?

    func validate() throws {
        guard count >= 1, count <= 10_000_000 else { throw ValidationError("--count must be 1 to 10000000") }
        guard entries >= 0, entries <= 10_000 else { throw ValidationError("--entries must be 0 to 10000") }
        guard UTC.parse(asOf) != nil else { throw ValidationError("--as-of '\(asOf)' is not an ISO 8601 time") }
        guard firstTransaction > 0, firstTransaction < 9_000_000_000_000_000_000 else {
            throw ValidationError("--first-transaction must be positive and leave room for the purchases")
        }
    }

    func run() throws {
        let receiptPKI = try ReceiptPKI.loadOrCreate(directory: pki)
        let handle: FileHandle
        if let out {
            guard FileManager.default.createFile(atPath: out, contents: nil), let h = FileHandle(forWritingAtPath: out) else {
                throw ValidationError("--out: cannot write \(out)")
            }
            handle = h
        } else {
            handle = FileHandle.standardOutput
        }
        let made = try BenchReceipts.write(
            count: count, entries: entries == 0 ? nil : entries, pki: receiptPKI, bundle: bundle, product: product,
            asOf: UTC.parse(asOf)!, prefix: prefix, firstTransaction: firstTransaction, seed: seed, to: handle)
        if out != nil { try handle.close() }
        FileHandle.standardError.write(Data(
            "receipts \(made.receipts) entries \(made.entries) valid_entries \(made.entriesValid) broken \(made.broken) mean_payload_bytes \(made.meanPayloadBytes)\n".utf8))
    }
}
