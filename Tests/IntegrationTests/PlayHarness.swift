// What the Play tests over HTTP share: Google Play's simulator behind the real server on an
// ephemeral port (its extra routes bridged to `PlayService`), the job's service-account key file
// on disk, and the job's Play settings pointing at both.

import AppStoreSimulator
import Foundation
import PlaySimulator
import PlayStore
import Testing
import _CryptoExtras

@testable import StoreIO

final class PlayHarness {
    /// The job's key (generating one takes a while: once for every suite).
    static let jobKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    let service: PlayService
    let sim: Simulator
    let settings: PlaySettings

    /// The simulator serving `truth` to the holder of `simulatorKey` (the job's own unless a test
    /// says otherwise), and settings for `packages` (and `subscription`) with the job's key file.
    init(
        truth: PlayTruth, packages: [String], subscription: String? = nil, simulatorKey: _RSA.Signing.PrivateKey = PlayHarness.jobKey,
        configure: (inout PlaySimulatorConfig) -> Void = { _ in }
    ) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("play-harness-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let keyPath = dir.appendingPathComponent("key.json").path
        try Data(PlayKeyFile.json(key: Self.jobKey, keyID: "k1")).write(to: URL(fileURLWithPath: keyPath))
        var config = try PlaySimulatorConfig(keyFile: PlayKeyFile.json(key: simulatorKey, keyID: "k1"), truth: truth)
        config.subscription = subscription
        configure(&config)
        let service = PlayService(config: config)
        self.service = service
        sim = try Simulator.start(
            SimulatorConfig(
                threads: 1,
                extraRoutes: { r in
                    service.answer(PlayRequest(method: r.method, path: r.path, query: r.query, headers: r.headers, body: r.body))
                        .map { SimRouteAnswer(status: $0.status, contentType: $0.contentType, body: $0.body, headers: $0.headers) }
                }))
        settings = try #require(
            try PlaySettings.load(
                keyFile: keyPath, applicationCredentials: nil, packageNames: packages.joined(separator: ","), apiURL: sim.baseURL,
                tokenURL: sim.baseURL + "/token", subscription: subscription, pubsubURL: sim.baseURL))
    }

    deinit { try? sim.shutdown() }

    /// A test's transport settings: a short backoff, a 3-second timeout.
    static var transportSettings: TransportSettings {
        var settings = TransportSettings()
        settings.retryBaseMs = 20
        settings.timeoutMs = 3000
        return settings
    }

    /// Calls the simulator counted for `endpoint`.
    func calls(_ endpoint: PlayEndpoint) -> Int { service.calls.filter { $0.endpoint == endpoint }.count }
}
