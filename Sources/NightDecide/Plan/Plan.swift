import Foundation
import JobStore
import Logging
import NightLearn
import Postgres

/// One step of a declared plan: what it reads and writes, which session runs it, and its work.
///
/// What a step reads and writes is a `Resource`, printed as the plan's table names it: a table of
/// the job schema (`job.apple_transactions`), a working table of the night (`night.g`), a source
/// relation (`source.iap_grants`), part of a table (`job.current_findings: refunds.csv`), a file of
/// tonight's report folder (`folder: compensate.csv`) or a value one step hands another
/// (`value: catalog`). A whole names its parts (`night` covers `night.g`).
/// The order of the steps is part of the plan: a step waits for every step before it that writes
/// what it reads or writes, or reads what it writes (`Plan.dependencies`), and for the milestones
/// it names in `after` (reached by a step before it, while that step runs).
struct PlanStep: Sendable {
    /// Which Postgres session runs the step.
    enum Session: String, Sendable {
        /// The run's own session, which holds the lock: one such step at a time, in plan order.
        case main
        /// One of the plan's pooled sessions, with the night's settings (`NightTables.use`): as
        /// many such steps at a time as the machine has cores, two at least.
        case pool
        /// A session of its own, with the night's settings, opened for the step and closed after
        /// it: work that runs beside the pool's (the tally, the findings history).
        case own
        /// No session: the step works on files or values only.
        case none
    }

    let name: String
    /// The stage of the night it belongs to (logged as `stage X` when its first step starts, and
    /// timed in summary.json's `stage_seconds`).
    let stage: String
    let session: Session
    let reads: [Resource]
    let writes: [Resource]
    /// Milestones (`"step: milestone"`) of steps before it that must be reached before it starts:
    /// they order work for the machine's cores, not for its data (a step's end reaches them too).
    var after: [String] = []
    /// The milestones this step reaches while it runs (`StepContext.reached`).
    var milestones: [String] = []
    /// Said in `run --plan`: how the step works where its row does not tell it.
    var note: String = ""
    let work: @Sendable (StepContext) throws -> Void

    func milestone(_ name: String) -> String { self.name + ": " + name }
}

/// What a running step gets: its session (nil for `.none`) and the way to say it reached a milestone.
struct StepContext {
    let db: PGConnection!
    let reached: @Sendable (String) -> Void
    /// Seconds per stage of the steps ended so far (`StepTrace.stageSeconds`).
    let stageSeconds: @Sendable () -> [String: Double]
}

/// When a step ran, on the monotonic clock (nanoseconds since the plan started).
struct StepTrace: Sendable, Equatable {
    let step: String
    let started: UInt64
    let ended: UInt64
    /// When it reached each of its milestones (at its end for one it did not say it reached).
    var milestones: [String: UInt64] = [:]
}

/// A plan: steps in order, and the scheduler that runs them.
struct Plan: Sendable {
    let steps: [PlanStep]

    /// The plan of `steps`, checked: one name per step, every milestone waited for reached by a step
    /// before, every value written by one step at most, and every value a step takes from another
    /// (`NightValue.handed`) written by a step before it.
    init(_ steps: [PlanStep]) {
        self.steps = steps
        let names = steps.map(\.name)
        precondition(Set(names).count == names.count, "a plan's steps have one name each")
        var writers: [NightValue: String] = [:]
        for (i, step) in steps.enumerated() {
            for mark in step.after {
                precondition(
                    steps[..<i].contains { s in s.milestones.contains { s.milestone($0) == mark } },
                    "\(step.name) waits for \(mark), which no step before it reaches")
            }
            for case .value(let value) in step.reads where value.handed {
                precondition(writers[value] != nil, "\(step.name) reads value: \(value), which no step before it writes")
            }
            for case .value(let value) in step.writes {
                precondition(writers[value] == nil, "value: \(value) has two writers, \(writers[value] ?? "") and \(step.name)")
                writers[value] = step.name
            }
        }
    }

    /// For each step, the steps before it it waits for: those that write what it reads or writes,
    /// or read what it writes.
    var dependencies: [[Int]] {
        steps.indices.map { i in
            (0..<i).filter { j in
                Self.overlap(steps[j].writes, steps[i].reads) || Self.overlap(steps[j].writes, steps[i].writes)
                    || Self.overlap(steps[j].reads, steps[i].writes)
            }
        }
    }

    /// For each step, the steps before it that write what it reads: what a traced night checks.
    var writersOfInputs: [[Int]] {
        steps.indices.map { i in (0..<i).filter { j in Self.overlap(steps[j].writes, steps[i].reads) } }
    }

    /// Whether two lists name something in common: the same name, or a whole and its part
    /// (`night` and `night.g`, `job.current_findings` and `job.current_findings: refunds.csv`).
    static func overlap(_ a: [Resource], _ b: [Resource]) -> Bool {
        a.contains { x in b.contains { y in x == y || x.covers(y) || y.covers(x) } }
    }

    /// The table `run --plan` prints.
    var table: String {
        let deps = dependencies
        var lines: [String] = []
        for (i, step) in steps.enumerated() {
            lines.append("\(i + 1). \(step.name)  [\(step.stage); session: \(step.session.rawValue)]")
            if !step.reads.isEmpty { lines.append("     reads:   " + step.reads.map(\.description).joined(separator: ", ")) }
            if !step.writes.isEmpty { lines.append("     writes:  " + step.writes.map(\.description).joined(separator: ", ")) }
            let waits = deps[i].map { String($0 + 1) }
            if !waits.isEmpty { lines.append("     after:   steps " + waits.joined(separator: ", ")) }
            if !step.after.isEmpty { lines.append("     starts:  once " + step.after.joined(separator: "; ")) }
            if !step.milestones.isEmpty {
                lines.append("     reaches: " + step.milestones.joined(separator: "; "))
            }
            if !step.note.isEmpty { lines.append("     note:    " + step.note) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Runs the steps, each as soon as the steps it waits for have ended, its milestones are
    /// reached and its session is free; returns when every step has ended. After a failure no
    /// step starts; the first failure is thrown once the running steps have ended.
    func run(main: PGConnection?, settings: JobSettings, logger: Logger) throws -> [StepTrace] {
        try PlanRun(plan: self, main: main, settings: settings, logger: logger).run()
    }
}

/// A pooled session handed to the step's thread, which alone uses it until it gives it back.
private struct Handed: @unchecked Sendable { let db: PGConnection? }

/// One run of a plan: the scheduler's state, guarded by `condition`.
///
/// Concurrency: each step runs on a thread of its own; the scheduler waits on the calling thread.
/// Every field is read and written with `condition` locked. A session (`PGConnection`) is used by
/// one step at a time: the main one by at most one `.main` step, a pooled one by the step that
/// took it from `idle` until it gives it back.
private final class PlanRun: @unchecked Sendable {
    let plan: Plan
    let dependencies: [[Int]]
    let main: PGConnection?
    let settings: JobSettings
    let logger: Logger
    let width = max(2, ProcessInfo.processInfo.activeProcessorCount)
    let origin = DispatchTime.now().uptimeNanoseconds

    let condition = NSCondition()
    enum State { case waiting, running, ended }
    var states: [State]
    var reached: Set<String> = []
    var failure: (any Error)?
    var mainBusy = false
    var pooledRunning = 0
    var idle: [PGConnection] = []
    var opened: [PGConnection] = []
    var started: [UInt64]
    /// When each milestone was first reached (`"step: milestone"`).
    var reachedAt: [String: UInt64] = [:]
    var trace: [StepTrace] = []
    var stagesLogged: Set<String> = []

    init(plan: Plan, main: PGConnection?, settings: JobSettings, logger: Logger) {
        self.plan = plan
        self.dependencies = plan.dependencies
        self.main = main
        self.settings = settings
        self.logger = logger
        states = Array(repeating: .waiting, count: plan.steps.count)
        started = Array(repeating: 0, count: plan.steps.count)
    }

    func run() throws -> [StepTrace] {
        condition.lock()
        while true {
            if failure == nil { startReady() }
            let running = states.contains(.running)
            if !running {
                if failure != nil || !states.contains(.waiting) { break }
                failure = JobError(
                    .internalCheck,
                    "the night's plan stopped with steps that can never start: "
                        + plan.steps.indices.filter { states[$0] == .waiting }.map { plan.steps[$0].name }.joined(separator: ", "))
                break
            }
            condition.wait()
        }
        let failure = self.failure, trace = self.trace, opened = self.opened
        condition.unlock()
        for db in opened { db.close() }
        if let failure { throw failure }
        return trace
    }

    private static func seconds(_ ns: UInt64) -> String { String(format: "%.2f", Double(ns) / 1e9) }

    /// Starts every step that can start now (locked).
    private func startReady() {
        for i in plan.steps.indices where states[i] == .waiting {
            let step = plan.steps[i]
            guard dependencies[i].allSatisfy({ states[$0] == .ended }), step.after.allSatisfy(reached.contains) else { continue }
            switch step.session {
            case .main: if mainBusy { continue }; mainBusy = true
            case .pool: if pooledRunning >= width { continue }; pooledRunning += 1
            case .own, .none: break
            }
            states[i] = .running
            started[i] = DispatchTime.now().uptimeNanoseconds - origin
            if stagesLogged.insert(step.stage).inserted { logger.info("stage \(step.stage)") }
            let pooled = Handed(db: step.session == .pool ? idle.popLast() : nil)
            Thread { [self] in self.execute(i, pooled: pooled.db) }.start()
        }
    }

    /// One step on its thread: its session, its work, its end.
    private func execute(_ i: Int, pooled: PGConnection?) {
        let step = plan.steps[i]
        var session: PGConnection?
        var own: PGConnection?
        let outcome = Result<Void, any Error> {
            switch step.session {
            case .main:
                guard let main else { throw JobError(.internalCheck, "step \(step.name) needs the run's session") }
                session = main
            case .none: session = nil
            case .pool:
                if let pooled {
                    session = pooled
                } else {
                    let db = try JobDatabase.connect(settings)
                    condition.withLock { opened.append(db) }
                    try NightTables.use(db, schema: settings.jobSchema)
                    session = db
                }
            case .own:
                let db = try JobDatabase.connect(settings)
                own = db
                try NightTables.use(db, schema: settings.jobSchema)
                session = db
            }
            try step.work(
                StepContext(
                    db: session,
                    reached: { [self] mark in
                        condition.withLock {
                            if reached.insert(step.milestone(mark)).inserted {
                                reachedAt[step.milestone(mark)] = DispatchTime.now().uptimeNanoseconds - origin
                            }
                            condition.broadcast()
                        }
                    }, stageSeconds: { [self] in StepTrace.stageSeconds(condition.withLock { trace }, plan: plan) }))
        }
        own?.close()
        condition.withLock {
            states[i] = .ended
            let ended = DispatchTime.now().uptimeNanoseconds - origin
            for mark in step.milestones where reached.insert(step.milestone(mark)).inserted {
                reachedAt[step.milestone(mark)] = ended
            }
            // `--log-level debug`: when each step ran, from the night's start (where a night's time goes).
            logger.debug("step \(i + 1) \(step.name): \(Self.seconds(started[i]))-\(Self.seconds(ended)) s")
            trace.append(
                StepTrace(
                    step: step.name, started: started[i], ended: ended,
                    milestones: Dictionary(
                        uniqueKeysWithValues: step.milestones.map {
                            ($0, reachedAt[step.milestone($0)] ?? ended)
                        })))
            switch step.session {
            case .main: mainBusy = false
            case .pool:
                pooledRunning -= 1
                if case .success = outcome, let session { idle.append(session) }
            case .own, .none: break
            }
            if case .failure(let error) = outcome, failure == nil { failure = error }
            condition.broadcast()
        }
    }
}
