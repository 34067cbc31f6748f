import ArgumentParser
import Foundation
import JobStore
import NightDecide
import NightReview

/// `iap-reconcile check`: what tonight would read, before a night runs; read-only.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check the source relations as tonight would read them, before a night runs: read-only.",
        discussion: """
            Run it first on your own database, and after any change to the views. It \
            takes the same settings as run and changes nothing: no App Store call, no lock, no ledger row, \
            plain SELECTs in one read-only snapshot. For each source relation: its rows, its input errors by \
            reason with up to five example keys, and the clean rows inside the window; the keys the last \
            published night kept that now hold other content (ids made by row_number()); grants without \
            Apple's transaction id, by product and by each --by column; the receipts settled at upload, \
            signed, and to verify with Apple, with the requests and time that implies at the last night's \
            rate; the last published night's rows per report with their median; and what tonight would list \
            per report, decided by the night's rules from what the job already knows (the answers the nights \
            stored; nothing is asked of Apple), in temporary tables rolled back: every family, or a sample of \
            --estimate-families scaled up. Without a job schema at this build's version the checks against the \
            last published night are skipped, and it says so.

            It fails (exit 65) on every expectation the night would hold on (the thresholds are run's \
            --hold-* options, tonight's lists included), on a relation of rows with none inside the \
            window, and on any grant without a transaction_id, naming each.

            Exit codes: 0 every expectation holds; 64 a bad option or --by column; 65 an expectation \
            failed, or the source relations do not match the contract; 75 the database unreachable; 78 \
            credentials refused or DATABASE_URL malformed.
            """ + "\n\n" + environmentHelp)

    @Option(
        name: .customLong("by"),
        help: ArgumentHelp(
            "A column of iap_grants to count the grants without a transaction id by (the tool that wrote them, say); repeatable.",
            valueName: "source_column"))
    var by: [String] = []

    @Option(
        name: .customLong("estimate-families"),
        help: ArgumentHelp(
            "About how many families (Apple's original transactions, grants' transactions) to decide for what tonight would "
                + "list; with no more than this many every family is decided and the counts are exact. (default: 2000)",
            valueName: "n"))
    var estimateFamilies: Int = 2000

    @Flag(help: "Print the answer as JSON (for tools) instead of lines.")
    var json = false

    @OptionGroup(title: "Expectations (the night's hold thresholds)")
    var hold: HoldOptions

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard (1...1_000_000).contains(estimateFamilies) else {
            throw ValidationError("--estimate-families must be a whole number from 1 to 1000000")
        }
        for column in by where column.isEmpty || column.utf8.count > 63 || column.contains("\u{0}") {
            throw ValidationError("--by must name a column of iap_grants")
        }
    }

    func run() throws {
        do {
            var settings = try common.settings()
            settings.hold = try hold.thresholds()
            let outcome = try Check(settings: settings, by: by, estimateFamilies: estimateFamilies).run()
            try printAnswer(outcome, json: json, lines: outcome.lines)
            if !outcome.failed.isEmpty {
                FileHandle.standardError.write(
                    Data(
                        ("iap-reconcile: check failed: "
                            + outcome.failed.map { "\($0.check) \($0.subject)".trimmingCharacters(in: .whitespaces) }.joined(
                                separator: ", ")
                            + " (see the lines above)\n").utf8))
                throw ExitCode(65)
            }
        } catch let error as JobError {
            throw failed(error)
        }
    }
}
