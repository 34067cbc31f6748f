import ArgumentParser
import Desk
import Foundation
import JobStore
import NightDecide
import Reconciliation

/// `iap-reconcile respond`: refund defense, every 15 minutes beside the night.
struct RespondCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "respond",
        abstract:
            "Answer Apple's refund requests (CONSUMPTION_REQUEST, 12 hours) and Google Play's refund reviews (24 hours) with what our grants prove.",
        discussion: """
            When a player asks Apple for a refund, Apple sends a CONSUMPTION_REQUEST notification and weighs \
            the developer's answer, if it comes within 12 hours. respond finds new requests in Get Notification \
            History (production and sandbox, from where its last run reached) and in the shop's own \
            iap_notifications(signed_payload, received_at) when there is one; verifies every signed payload; \
            decides each open request by the night's rules (the verdict lookup gives): DELIVERED when our active \
            grants cover the purchase, UNDELIVERED_OTHER when it is ours and was never (fully) granted; \
            consumptionPercentage from the optional iap_consumption(transaction_id, consumption_percentage \
            [, delivery_status]); customerConsented only from iap_consents(user_id, consented_at) with a consent \
            given before the request (else nothing is sent: no_consent); sampleContentProvided from \
            iap_products.sample_content_provided or --sample-content-provided. A request older than 12 hours is \
            not answered (expired); one the rules cannot judge is recorded (not_judged). Everything is stored in \
            the job schema (consumption_requests); the night lists it in consumption_requests.csv.

            Sending is opt-in: without --send (or IAP_CONSUMPTION_RESPONSES=send) respond records and prints what \
            it would send, so a team can review answers before switching on. Each request is answered once: \
            stored as sending before the call and as sent after; a run killed in between sends that one again \
            on the next run (the one repeat). 429 and 5xx are retried; a 4xx is recorded with Apple's errorCode. \
            Run it every 15 minutes (jobs/iap-reconcile-respond.timer, or the cron line in jobs/). It has its own \
            lock (it runs while the night runs), never migrates, and uses --share-percent of Apple's limits.

            Google Play: with PLAY_PUBSUB_SUBSCRIPTION (the job's own pull subscription on the apps' notification \
            topic), each run pulls it, storing each message before acknowledging it, and answers each pending \
            refund review (orders.reviewrefund) within Google's 24 hours by the night's Play rules: \
            refundPreference NEUTRAL, or with --refund-preference from-delivery APPROVE for a purchase our grants \
            do not cover and DECLINE for one consumed at or above --decline-above; consumptionPercentageMilliunits \
            from iap_consumption by Google's order id. Google keeps the first answer: each is sent once. Without \
            the subscription, Play's refund defense is off and respond says so.

            Exit codes: 0 done; 64 bad option; 75 Apple or the database unreachable, or another respond holds \
            the lock; 78 credentials missing or refused (neither the Server API key nor a Play subscription), or \
            the job schema behind (run iap-reconcile migrate).
            """ + "\n\n" + environmentHelp)

    @Option(help: ArgumentHelp("respond's clock (ISO 8601), for tests and replays; default: now.", valueName: "time"))
    var now: String?

    @Flag(help: "Send the answers to Apple (also IAP_CONSUMPTION_RESPONSES=send). Without it, answers are recorded and printed only.")
    var send = false

    @Option(
        help: ArgumentHelp(
            "The share of Apple's per-app request limits respond uses, in percent (the night uses 90).",
            valueName: "percent"))
    var sharePercent = 10.0

    @Flag(inversion: .prefixedNo, help: "sampleContentProvided for products without iap_products.sample_content_provided (default: false).")
    var sampleContentProvided = false

    @Option(
        help: ArgumentHelp(
            "off (default), or from-delivery: DECLINE for a delivered purchase consumed at or above --decline-above, GRANT_FULL for an undelivered one. GRANT_PRORATED is never sent.",
            valueName: "mode"))
    var refundPreference = "off"

    @Option(help: ArgumentHelp("The consumption, in percent, at or above which from-delivery declines (0-100).", valueName: "percent"))
    var declineAbove = 50.0

    @Flag(help: "Print what was decided as JSON (for tools) instead of lines.")
    var json = false

    @OptionGroup var common: CommonOptions

    func validate() throws {
        guard common.asOf == nil else { throw ValidationError("respond takes --now, not --as-of") }
        guard sharePercent > 0, sharePercent <= 100 else { throw ValidationError("--share-percent must be above 0 and at most 100") }
        guard (0...100).contains(declineAbove) else { throw ValidationError("--decline-above must be 0 to 100 (percent)") }
        guard RefundDefenseSettings.PreferenceMode(rawValue: refundPreference) != nil else {
            throw ValidationError("--refund-preference must be off or from-delivery")
        }
        if let now, UTC.parse(now) == nil {
            throw ValidationError("--now '\(now.prefix(40))' is not an ISO 8601 time (e.g. 2026-11-21T03:00:00Z)")
        }
    }

    func run() throws {
        do {
            var common = common
            common.asOf = now
            var options = RespondOptions()
            let env = ProcessInfo.processInfo.environment["IAP_CONSUMPTION_RESPONSES"] ?? ""
            guard ["", "send", "record"].contains(env) else {
                throw JobError(.usage, "IAP_CONSUMPTION_RESPONSES must be send or record (it is '\(env.prefix(20))')")
            }
            options.send = send || env == "send"
            options.sharePercent = sharePercent
            options.rules = RefundDefenseSettings(
                sampleContentProvided: sampleContentProvided,
                refundPreference: RefundDefenseSettings.PreferenceMode(rawValue: refundPreference) ?? .off,
                declineAbove: Int((declineAbove * 1000).rounded()))
            let settings = try common.settings()
            var respond = RespondRun(settings: settings, options: options, logger: common.logger())
            let result: RespondResult
            do { result = try respond.run() } catch let error as JobError {
                writeMetrics(settings.metricsFile, exitCode: error.code.rawValue, result: nil)
                throw error
            }
            writeMetrics(settings.metricsFile, exitCode: 0, result: result)
            try printAnswer(result, json: json, lines: result.lines)
        } catch let error as JobError {
            throw failed(error)
        }
    }

    /// `--metrics-file`, on every exit past the options; a file that cannot be written is a
    /// warning, never another exit code.
    private func writeMetrics(_ path: String?, exitCode: Int32, result: RespondResult?) {
        guard let path else { return }
        do {
            try RunOutcome.writeRespondMetrics(
                exitCode: exitCode, endedAt: EpochMillis(Date().timeIntervalSince1970 * 1000),
                result: result, path: path)
        } catch {
            FileHandle.standardError.write(Data("iap-reconcile: warning: the metrics file \(path) cannot be written: \(error)\n".utf8))
        }
    }
}
