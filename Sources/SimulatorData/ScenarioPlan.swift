import AppStoreSimulator
import Reconciliation

/// One scenario's rows and expected findings.
struct UserData {
    var scenario: Scenario?
    var orders: [OrderRow] = []
    var receipts: [ReceiptRow] = []
    var grants: [GrantRow] = []
    var products: [ProductRow] = []
    /// Refunds verifyReceipt shows (the refund list `--refunds`).
    var refunds: [RefundRow] = []
    /// Refunds only the Server API shows (the truth's, always written): by transaction id.
    var appleRefunds: [String: SimRefund] = [:]
    /// Transactions Apple has that no upload shows (API-only purchases).
    var appleOnly: [AppleTruthRow] = []
    /// The storefront of a transaction, decided once by the scenario (absent: USA).
    var storefronts: [String: SimStorefront] = [:]
    /// The app the user plays in (`GeneratorSettings.app(ofSlot:)`).
    var bundle = ""
    /// Findings waiting for facts decided after the scenario (StoreKit 2 uploads), then rendered.
    var pending = PendingFindings()
    var compensate: [[String]] = []
    var duplicates: [[String]] = []
    var clawback: [[String]] = []
    var inputErrors: [[String]] = []
    var refundRows: [[String]] = []
    var unattributed: [[String]] = []

    func storefront(of transactionID: String) -> SimStorefront { storefronts[transactionID] ?? .usa }
}

/// Walks the user slots in order and builds each scenario; every pass sees the same data.
struct ScenarioPlan {
    let settings: GeneratorSettings

    /// The scenarios that every database of at least `4 × count` users contains once at its start.
    private var guaranteed: [Scenario] {
        Scenario.allCases.filter { !$0.isClean && $0 != .apiBench && (settings.signing || !$0.isSigned) }
    }

    func forEach(_ body: (UserData) throws -> Void) rethrows {
        let n = settings.users
        let forced = n >= 4 * (guaranteed.count + 1) ? guaranteed : []
        var u = 0
        var forcedIndex = 0
        while u < n {
            var rng = SeededRandom(seed: SimHash.combine(settings.seed, UInt64(u), 0x5CE7))
            var scenario: Scenario
            if forcedIndex < forced.count {
                scenario = forced[forcedIndex]
                forcedIndex += 1
            } else {
                scenario = Self.draw(&rng)
            }
            if scenario.userSlots > 1 && u + scenario.userSlots > n { scenario = .cleanConsumable }
            if scenario.isSigned && !settings.signing { scenario = .cleanConsumable }
            try body(user(u, scenario, rng: rng))
            u += scenario.userSlots
        }
        if settings.badRows { try body(badRowData()) }
        // The bench users come after the bad-row block's two slots, so adding them changes no id.
        for i in 0..<settings.apiBench {
            let slot = n + 2 + i
            try body(user(slot, .apiBench, rng: SeededRandom(seed: SimHash.combine(settings.seed, UInt64(slot), 0xBE4C))))
        }
    }

    private func user(_ u: Int, _ scenario: Scenario, rng: SeededRandom) -> UserData {
        var b = ScenarioBuilder(settings: settings, rng: rng, u: u)
        b.build(scenario)
        b.data.scenario = scenario
        // A StoreKit 2 client: decided by its own hash, so the scenario's draws stay the same.
        if settings.signing
            && Double(SimHash.combine(settings.seed, UInt64(u), 0x5C2) % 10_000)
                < settings.storeKit2Share * 10_000
        {
            b.uploadSignedTransactions()
        }
        b.finish()
        return b.data
    }

    /// The rows of the bad-row block alone (empty without --bad-rows).
    func badRowData() -> UserData {
        guard settings.badRows else { return UserData(bundle: settings.catalog.bundle) }
        var b = ScenarioBuilder(
            settings: settings, rng: SeededRandom(seed: SimHash.combine(settings.seed, 0xBAD)),
            u: settings.users, app: settings.catalog)
        b.badRows()
        b.finish()
        return b.data
    }

    static func draw(_ rng: inout SeededRandom) -> Scenario {
        var x = Int.random(in: 0..<1000, using: &rng)
        for s in Scenario.allCases {
            if x < s.perMille { return s }
            x -= s.perMille
        }
        return .cleanConsumable
    }
}
