import AppStore
import AppStoreSimulator
import Foundation
import Logging
@testable import JobStore
@testable import NightDecide
@testable import NightLearn
import Reconciliation
import StoreIO
import Synchronization
import Testing

/// The night as one declared plan. The scheduler starts a step only once every
/// step before it that writes what it reads has ended, and `run --plan` prints what it runs.
@Suite("The night's plan", .serialized)
struct NightPlanTests {
    private static func step(_ name: String, reads: [Resource] = [], writes: [Resource] = [], after: [String] = [],
                             milestones: [String] = [], session: PlanStep.Session = .none,
                             _ work: @escaping @Sendable (StepContext) throws -> Void = { _ in usleep(20_000) }) -> PlanStep {
        PlanStep(name: name, stage: "test", session: session, reads: reads, writes: writes, after: after,
                 milestones: milestones, work: work)
    }

    private static func run(_ plan: Plan) throws -> [String: StepTrace] {
        let trace = try plan.run(main: nil, settings: JobSettings(asOf: 0, jobSchema: try JobSchema("recon")),
                                 logger: Logger(label: "plan-test"))
        return Dictionary(uniqueKeysWithValues: trace.map { ($0.step, $0) })
    }

    @Test("dependencies: a writer before a reader, parts and wholes overlap, independent steps run side by side")
    func dependencies() throws {
        let plan = Plan([
            Self.step("make", writes: [.night(nil)]),
            Self.step("copy g", reads: [.source(.grants)], writes: [.night(.g)]),
            Self.step("copy o", reads: [.source(.orders)], writes: [.night(.o)]),
            Self.step("use g", reads: [.night(.g)], writes: [.value(.coverage)]),
            Self.step("drop", writes: [.night(nil)]),
        ])
        #expect(plan.dependencies == [[], [0], [0], [0, 1], [0, 1, 2, 3]])
        #expect(plan.writersOfInputs == [[], [], [], [0, 1], []])
        let at = try Self.run(plan)
        #expect(at.count == 5)
        for (i, deps) in plan.dependencies.enumerated() {
            for j in deps { #expect(at[plan.steps[j].name]!.ended <= at[plan.steps[i].name]!.started) }
        }
        // The two copies wait for nothing but `make`: they ran at the same time.
        let g = at["copy g"]!, o = at["copy o"]!
        #expect(g.started < o.ended && o.started < g.ended, "\(g) \(o)")
    }

    @Test("a whole covers its parts as their printed names say (`night` and `night.g`, `value: tally` and `value: tally: iap_orders`), nothing else")
    func coversAsNamed() throws {
        var settings = JobSettings(asOf: 0, jobSchema: try JobSchema("recon"))
        settings.apiSweeps = true
        var names: Set<Resource> = [.job(nil), .source(nil), .night(nil), .folder(nil), .value(.tally(nil)), .reports]
        for stages in [Night.Stages.full(verify: true), .decideDatabaseOnly] {
            let plan = Night(settings: settings, logger: Logger(label: "plan-test"))
                .plan(stages, command: "run", values: NightValues(settings: settings, summary: RunSummary(asOf: 0, windowDays: 30)))
            for step in plan.steps { names.formUnion(step.reads + step.writes) }
        }
        #expect(names.count > 60)
        var covering = 0
        for whole in names {
            for part in names {
                let named = "\(part)".hasPrefix("\(whole).") || "\(part)".hasPrefix("\(whole): ")
                #expect(whole.covers(part) == named, "\(whole) and \(part)")
                if named { covering += 1 }
            }
        }
        #expect(covering > 40)
    }

    @Test("every step after the source check waits for it, whatever the night: tonight's settings are its result")
    func settingsAreReadAfterTheSourceCheck() throws {
        var settings = JobSettings(asOf: 0, jobSchema: try JobSchema("recon"))
        settings.apiSweeps = true
        // The sales reports configured: on a night without their step (--no-verify), the coverage
        // step read nothing anyone wrote and started at once, before the check wrote the settings.
        let key = try TestPKI.create().leafKey.pemRepresentation
        settings.appStoreConnect = AppStoreConnectSettings(
            teamKey: try AppStoreJWT.teamKey(privateKeyPEM: key, keyID: "K", issuerID: "I"), vendorNumber: "1")
        for stages in [Night.Stages.full(verify: true), .full(verify: false), .verifyOnly] {
            let plan = Night(settings: settings, logger: Logger(label: "plan-test"))
                .plan(stages, command: "run", values: NightValues(settings: settings, summary: RunSummary(asOf: 0, windowDays: 30)))
            let steps = plan.steps
            guard let check = steps.firstIndex(where: { $0.writes.contains(.value(.settings)) }) else {
                Issue.record("\(stages): no step writes value: settings")
                continue
            }
            // What each step waits for: the steps that write what it reads, the milestones it names,
            // and (one session) the main session's step before it.
            var waits = plan.dependencies.map(Set.init)
            for (i, step) in steps.enumerated() {
                for mark in step.after {
                    if let j = steps.firstIndex(where: { s in s.milestones.contains { s.milestone($0) == mark } }) { waits[i].insert(j) }
                }
                if step.session == .main, let j = steps[..<i].lastIndex(where: { $0.session == .main }) { waits[i].insert(j) }
            }
            var before = [Set<Int>](repeating: [], count: steps.count)
            for i in steps.indices {
                for j in waits[i] { before[i].insert(j); before[i].formUnion(before[j]) }
            }
            // Two steps use only the run's settings as given (`values.base`): the ledger's row and
            // emptying the current findings. A new step joins them only by being named here.
            let asGiven: Set = ["start the ledger", "empty findings"]
            for i in steps.indices where i > check && !asGiven.contains(steps[i].name) {
                #expect(before[i].contains(check), "\(stages): \(steps[i].name) may start before \(steps[check].name)")
            }
        }
    }

    @Test("a milestone lets a step start while the step that reaches it still runs")
    func milestones() throws {
        let seen = Mutex<[String]>([])
        let plan = Plan([
            Self.step("long", milestones: ["half"]) { c in
                usleep(30_000)
                c.reached("half")
                usleep(150_000)
                seen.withLock { $0.append("long ends") }
            },
            Self.step("beside", after: ["long: half"]) { _ in seen.withLock { $0.append("beside runs") } },
        ])
        let at = try Self.run(plan)
        #expect(at["beside"]!.started < at["long"]!.ended)
        let half = try #require(at["long"]!.milestones["half"])
        #expect(at["long"]!.started < half && half <= at["beside"]!.started && half < at["long"]!.ended)
        #expect(seen.withLock { $0 } == ["beside runs", "long ends"])
    }

    @Test("after a failure no step starts; the first failure is thrown once the running steps ended")
    func failure() throws {
        let ran = Mutex<Set<String>>([])
        let plan = Plan([
            Self.step("fails", writes: [.job(.runs)]) { _ in throw JobError(.internalCheck, "the first failure") },
            Self.step("beside", writes: [.job(.findings)]) { _ in usleep(100_000); ran.withLock { _ = $0.insert("beside") } },
            Self.step("reads x", reads: [.job(.runs)]) { _ in ran.withLock { _ = $0.insert("reads x") } },
        ])
        #expect(throws: JobError.self) { _ = try Self.run(plan) }
        do { _ = try Self.run(plan) } catch let e as JobError { #expect(e.message == "the first failure") }
        #expect(ran.withLock { $0 } == ["beside"])
    }

    @Test("run --plan prints every step of the night with what it reads and writes, touching no database")
    func printedPlan() throws {
        let shown = try runTool("iap-reconcile", ["run", "--plan"], environment: ["DATABASE_URL": "host=/nonexistent dbname=none"])
        #expect(shown.status == 0, "\(shown.stderr)")
        let settings = JobSettings(asOf: 0, jobSchema: try JobSchema("recon"))
        let plan = Night(settings: settings, logger: Logger(label: "plan-test"))
            .plan(.full(verify: true), command: "run",
                  values: NightValues(settings: settings, summary: RunSummary(asOf: 0, windowDays: 30)))
        for (i, step) in plan.steps.enumerated() {
            #expect(shown.stdout.contains("\(i + 1). \(step.name)  ["), "\(step.name) missing from run --plan")
        }
        for name in ["verify receipts", "families", "refunds", "tally receipts", "findings history", "compensate.csv", "publish"] {
            #expect(plan.steps.contains { $0.name == name }, "\(name)")
        }
        #expect(shown.stdout.contains("reads:   night.g, night.r"))
        #expect(shown.stdout.contains("starts:  once families: merged"))
        let noVerify = try runTool("iap-reconcile", ["run", "--plan", "--no-verify"], environment: [:])
        #expect(noVerify.status == 0 && !noVerify.stdout.contains("verify receipts") && noVerify.stdout.contains("publish"))
    }

    @Test("a traced night: each step started only after every step writing its inputs ended, as run --plan declares; its reports are the binary's",
          .enabled(if: Harness.hasDatabase))
    func tracedNight() throws {
        let w = try ServerAPINightTests.world("plan_trace", share: "0.25")
        defer { w.stop() }
        let ran = try w.night()
        #expect(ran.status == 0, "\(ran.stderr)")
        var settings = JobSettings(asOf: try #require(UTC.parse(NightTests.asOf)), jobSchema: try JobSchema("recon"))
        settings.databaseURL = "dbname=\(w.t.name)"
        settings.progress = false
        let out = try Harness.scratchDirectory("plan-trace-out")
        settings.out = out.path
        let night = Night(settings: settings, logger: Logger(label: "plan-trace"))
        _ = try night.run(.full(verify: false), command: "run")
        let plan = try #require(night.lastPlan)
        let trace = night.lastTrace
        #expect(trace.map(\.step).sorted() == plan.steps.map(\.name).sorted())
        let at = Dictionary(uniqueKeysWithValues: trace.map { ($0.step, $0) })
        var checked = 0
        for (i, writers) in plan.writersOfInputs.enumerated() {
            let step = plan.steps[i].name
            for j in writers {
                let writer = plan.steps[j].name
                #expect(at[writer]!.ended <= at[step]!.started, "\(step) started before \(writer), which writes what it reads, ended")
                checked += 1
            }
        }
        #expect(checked > 40)
        // Steps did run side by side (the scheduler is not a loop over the list).
        #expect(trace.contains { a in trace.contains { b in a.step < b.step && a.started < b.ended && b.started < a.ended } })
        // A step that names a milestone (`starts: once …`) began after it was reached; the
        // receipts' tally began while the families were still being decided.
        var milestonesChecked = 0
        for step in plan.steps {
            for mark in step.after {
                let (name, milestone) = (String(mark.split(separator: ":")[0]), String(mark.split(separator: ": ")[1]))
                let reachedAt = try #require(at[name]?.milestones[milestone], "\(mark) never reached")
                #expect(reachedAt <= at[step.name]!.started, "\(step.name) started before \(mark)")
                milestonesChecked += 1
            }
        }
        #expect(milestonesChecked >= 3)
        #expect(at["tally receipts"]!.started < at["families"]!.ended)
        // The same reports as the binary's night.
        let day = "2026-11-21"
        for file in ReportFile.published(play: false) {
            let mine = try String(contentsOf: out.appendingPathComponent(day).appendingPathComponent(file.rawValue), encoding: .utf8)
            let binary = try String(contentsOf: w.out.appendingPathComponent(day).appendingPathComponent(file.rawValue), encoding: .utf8)
            #expect(mine == binary, "\(file.rawValue) differs")
        }
    }
}
