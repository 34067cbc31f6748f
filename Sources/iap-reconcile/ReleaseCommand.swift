import ArgumentParser
import Foundation
import JobStore
import NightDecide
import NightLearn
import Reconciliation

/// `run`'s thresholds for holding a night (docs/contract.md, "Held nights").
struct HoldOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Hold the night when a source relation of at least --hold-min-rows rows has more input errors than this percent of its rows.",
            valueName: "percent"))
    var holdInputErrorsPercent: Double = 5

    @Option(
        help: ArgumentHelp(
            "A relation or a report with fewer rows than this is never held by a percent or a median.", valueName: "rows"))
    var holdMinRows = 100

    @Option(
        help: ArgumentHelp(
            "Hold the night when compensate or clawback lists more rows than this percent of the orders created inside the window.",
            valueName: "percent"))
    var holdFindingsPercent: Double = 25

    @Option(
        help: ArgumentHelp(
            "Hold the night when compensate or clawback lists more than this many times the median rows of the last 30 published nights (once there are --hold-median-nights).",
            valueName: "times"))
    var holdMedianTimes: Double = 5

    @Option(help: ArgumentHelp("Published nights needed before the median rule applies.", valueName: "nights"))
    var holdMedianNights = 7

    @Option(
        help: ArgumentHelp(
            "Hold the night when a source relation's rows, or its rows inside the window, fall below this percent of the last published night's (a view that lost its rows; a time column read in the wrong unit).",
            valueName: "percent"))
    var holdRowsPercent: Double = 20

    @Option(
        help: ArgumentHelp(
            "Hold the night when more than this percent of the last published night's keys (a sample of up to 20,000 per relation) now hold other content: an order id now another user's, a receipt id now another upload.",
            valueName: "percent"))
    var holdKeysPercent: Double = 1

    @Option(
        help: ArgumentHelp(
            "publish, or hold: the job schema's first night (no night published yet) is held for review, as the go-live does.",
            valueName: "publish|hold"))
    var firstNight: FirstNight = .publish

    enum FirstNight: String, ExpressibleByArgument, CaseIterable { case publish, hold }

    func thresholds() throws -> HoldThresholds {
        for (name, value) in [
            ("--hold-input-errors-percent", holdInputErrorsPercent), ("--hold-findings-percent", holdFindingsPercent),
            ("--hold-median-times", holdMedianTimes), ("--hold-rows-percent", holdRowsPercent),
            ("--hold-keys-percent", holdKeysPercent),
        ]
        where !(value.isFinite && value >= 0 && value <= 1_000_000) {
            throw ValidationError("\(name) must be a number from 0 to 1000000")
        }
        guard holdMinRows >= 0 else { throw ValidationError("--hold-min-rows must be at least 0") }
        guard holdMedianNights >= 1 else { throw ValidationError("--hold-median-nights must be at least 1") }
        var t = HoldThresholds()
        t.inputErrorsPercent = holdInputErrorsPercent
        t.minRows = holdMinRows
        t.findingsPercent = holdFindingsPercent
        t.medianTimes = holdMedianTimes
        t.medianNights = holdMedianNights
        t.rowsPercent = holdRowsPercent
        t.keysPercent = holdKeysPercent
        t.holdFirstNight = firstNight == .hold
        return t
    }
}

/// `iap-reconcile release DATE --note TEXT`: publishes a held night once a person has checked it.
struct ReleaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "release",
        abstract: "Publish a held night once a person has checked it.",
        discussion: """
            A night that looks wrong (docs/contract.md, 'Held nights') writes its reports to \
            <out>/held/<date>/, changes no findings history and exits 65. When its lists are right after all, \
            release publishes it: the findings history it kept aside is applied as the night would have \
            written it, the run is marked released in the ledger (the note, who: SUDO_USER else USER, when), \
            summary.json gains "released", and the folder is renamed into <out>/<date>/. It takes the night's \
            lock. Only the last run of that date, and only while no later night is published. Safe to run \
            again.

            Exit codes: 0 released; 64 a bad date or note, no held night of that date, or a later night \
            already published; 73 the folder cannot be renamed; 75 the database unreachable or a night \
            running; 78 credentials refused or the job schema behind (run iap-reconcile migrate).
            """ + "\n\n" + environmentHelp)

    @Argument(help: ArgumentHelp("The held night's date, as in <out>/held/<date>/ (YYYY-MM-DD, UTC).", valueName: "date"))
    var date: String

    @Option(help: ArgumentHelp("Why the night is right to publish: kept in the ledger and in summary.json.", valueName: "text"))
    var note: String

    @Option(help: "The night's reports folder (run's --out).")
    var out = JobSettings.defaults.out

    @Option(help: "The job's own schema (run's --job-schema).")
    var jobSchema = JobSchema.standard.name

    @Option(help: "Seconds to wait for a running night's lock before giving up with exit 75.")
    var lockWaitSeconds = JobSettings.defaults.lockWaitSeconds

    func run() throws {
        guard (0...3600).contains(lockWaitSeconds) else { throw ValidationError("--lock-wait-seconds must be from 0 to 3600") }
        let env = ProcessInfo.processInfo.environment
        do {
            var settings: JobSettings
            do {
                settings = JobSettings(asOf: EpochMillis(Date().timeIntervalSince1970 * 1000), jobSchema: try JobSchema(jobSchema))
            } catch let e as JobError {
                throw ValidationError(e.message)
            }
            settings.out = out
            settings.lockWaitSeconds = lockWaitSeconds
            if let v = env["DATABASE_URL"], !v.isEmpty { settings.databaseURL = v }
            let outcome = try Release.run(settings: settings, day: date, note: note, by: Release.login(env))
            FileHandle.standardError.write(
                Data(
                    """
                    iap-reconcile: the night of \(date) (run \(outcome.runID)) is released\
                    \(outcome.alreadyApplied ? " (its history was applied by an earlier release)" : ""): \
                    reports in \(outcome.folder)/

                    """.utf8))
        } catch let error as JobError {
            throw failed(error)
        }
    }
}
