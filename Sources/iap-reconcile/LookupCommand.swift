import ArgumentParser
import Desk
import Foundation
import JobStore

/// `iap-reconcile lookup`: for customer service, one purchase at a time.
struct LookupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookup",
        abstract: "What Apple and our data say about one purchase, and what customer service should do.",
        discussion: """
            Give the order ID of Apple's invoice e-mail (the customer forwards it; e.g. MK5TTTVWJH): Look Up \
            Order ID lists the order's transactions. Or --transaction ID: Get Transaction Info (production, \
            then the sandbox). Or what customer service holds: --our-order ID, our own order id \
            (iap_orders.order_id, not Apple's invoice order ID): the purchases our data ties to it (the order's \
            transaction_id, its grants and uploads, what the nights learned of them, a purchase whose \
            appAccountToken is the order, one the inferred match gives it); --user ID: every purchase of that \
            user of the last --days N days (default: the night's window, --window-days), newest first, and \
            the user's orders without a known payment. Every signed transaction Apple returns is verified \
            before it is believed. Each purchase is then decided as the night decides it, by the same rules \
            on today's data (give the night's --as-of, --window-days and --account-token-namespace to ask \
            about a past night): granted (nothing to do), compensate N × PRODUCT to user U (with the order), \
            claw back a refunded or unproven grant, refunded, a restore, outside the window, or ask the \
            customer for their user id when nothing of ours ties it to a user. Each line names the report \
            that lists it (and since when). Reads only; needs the database with the job schema (a night or \
            `iap-reconcile migrate` made it). With the App Store Server API (IAP_ISSUER_ID, IAP_KEY_ID, \
            IAP_PRIVATE_KEY_FILE, IAP_BUNDLE_IDS) Apple is asked now; without it --transaction, --our-order \
            and --user answer from our data and what the nights learned, and say so (--json "source"); \
            Apple's invoice order ID needs the Server API. A Google Play purchase: its order ID (GPA.…, on \
            Google's receipt e-mail) or --token TOKEN, answered from what the nights learned of it and our Play \
            rows (Google is not asked now): the same verdicts, and not_paid for a pending, cancelled or unknown \
            purchase, with an acknowledgement still due.

            Exit codes: 0 answered (found or not found, from Apple or from our data); 64 bad id or option \
            (an id of ours empty, over 200 bytes, with a control character or not UTF-8); 75 Apple or the \
            database unreachable, or an answer that fails verification; 78 Apple's invoice order ID without \
            Server API credentials, credentials refused, or no job schema yet.
            """ + "\n\n" + environmentHelp)

    @Argument(help: "The order ID on Apple's invoice e-mail, or Google Play's order ID (GPA.…) of Google's receipt.")
    var orderID: String?

    @Option(name: .customLong("token"), help: "Look up this Google Play purchase token.")
    var token: String?

    @Option(name: .customLong("transaction"), help: "Look up this transaction id instead of an order ID.")
    var transactionID: String?

    @Option(name: .customLong("our-order"), help: "Look up our own order id (iap_orders.order_id), not Apple's invoice order ID.")
    var ourOrder: String?

    @Option(name: .customLong("user"), help: "List every purchase of this user id of ours of the last --days days.")
    var user: String?

    @Option(name: .customLong("days"), help: "With --user: how many days back (1 to 3660; default: --window-days).")
    var days: Int?

    @Flag(help: "Print the answer as JSON (for tools) instead of sentences.")
    var json = false

    @OptionGroup var common: CommonOptions

    func run() throws {
        do {
            let target = try LookupTarget.parse(
                orderID: orderID, transactionID: transactionID, ourOrder: ourOrder, user: user,
                days: days, windowDays: common.windowDays, token: token)
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
