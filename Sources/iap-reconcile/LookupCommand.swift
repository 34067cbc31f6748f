import ArgumentParser
import Foundation
import ReconcileJob

/// `iap-reconcile lookup`: for customer service, one purchase at a time.
struct LookupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "What Apple and our data say about one purchase, and what customer service should do.",
        discussion: """
        Give the order ID of Apple's invoice e-mail (the customer forwards it; e.g. MK5TTTVWJH): Look Up \
        Order ID lists the order's transactions. Or --transaction ID: Get Transaction Info (production, \
        then the sandbox). Every signed transaction of the answer is verified before it is believed. Each \
        is then decided as the night decides it, by the same rules on today's data (give the night's \
        --as-of, --window-days and --account-token-namespace to ask about a past night): granted (nothing \
        to do), compensate N × PRODUCT to user U (with the order), claw back a refunded or unproven grant, \
        refunded, a restore, outside the window, or ask the customer for their user id when nothing of \
        ours ties it to a user. When a night listed it, the line says which report and since when. Reads \
        only; needs the App Store Server API (IAP_ISSUER_ID, IAP_KEY_ID, IAP_PRIVATE_KEY_FILE, \
        IAP_BUNDLE_IDS) and the database with the job schema (a night or `iap-reconcile migrate` made it).

        Exit codes: 0 Apple answered (found or not found); 64 bad id; 75 Apple or the database \
        unreachable; 78 credentials missing or refused, or no job schema yet.
        """ + "\n\n" + environmentHelp)

    @Argument(help: "The order ID on Apple's invoice e-mail.")
    var orderID: String?

    @Option(name: .customLong("transaction"), help: "Look up this transaction id instead of an order ID.")
    var transactionID: String?

    @Flag(help: "Print the answer as JSON (for tools) instead of sentences.")
    var json = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        do {
            let target = try LookupTarget.parse(orderID: orderID, transactionID: transactionID)
            var lookup = LookupRun(settings: try common.settings())
            let result = try lookup.run(target)
            try printAnswer(result, json: json, lines: result.lines)
        } catch let error as JobError {
            throw failed(error)
        }
    }
}

/// A command's answer on stdout: JSON for tools (sorted keys, the same bytes for the same
/// answer), or lines for people.
func printAnswer(_ value: some Encodable, json: Bool, lines: [String]) throws {
    if json {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        FileHandle.standardOutput.write(try encoder.encode(value) + Data("\n".utf8))
    } else {
        print(lines.joined(separator: "\n"))
    }
}

/// The one line of a failed command on stderr (secrets redacted), and its exit code.
func failed(_ error: JobError) -> ExitCode {
    FileHandle.standardError.write(Data("iap-reconcile: \(Secrets.redact(error.message))\n".utf8))
    return ExitCode(error.code.rawValue)
}
