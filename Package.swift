// swift-tools-version: 6.0
import PackageDescription

// Layout (ARCHITECTURE.md draws it):
//   CLibPQ, CCurl            system libraries (libpq, libcurl) with tiny shims
//   Postgres, HTTP           thin, domain-free Swift wrappers that own the C resources
//   Reconciliation           the functional core: domain types, decision rules, report rows
//   StrictJSON               the strict JSON reader and writer every store's wire uses
//   PlayStore                Google Play's protocols: service-account OAuth, Play API paths and answers
//   AppStore                 the verifyReceipt protocol: request, answer classes, parsing;
//                            StoreKit 2 signed transactions (Signed/: JWS, x5c chain, ES256)
//   JobStore, StoreIO        the job's schema; the transport to a store's endpoints
//   NightLearn, NightDecide  the night: what it learns from Apple; what it decides and writes
//   Desk                     lookup and respond, between nights
//   iap-reconcile            the command
//   AppStoreSimulator, SimulatorData, iap-sim  the App Store test double (a real HTTP server), the data generator, their command
let v6: [SwiftSetting] = [.swiftLanguageMode(.v6)]

let package = Package(
    name: "iap-reconcile",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "iap-reconcile", targets: ["iap-reconcile"]),
        .executable(name: "iap-sim", targets: ["iap-sim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        // StoreKit 2 signed transactions: chain building and policies, ES256, DER.
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        // reconciliation.xlsx: read back by the tests (Tests/XLSXReading), an
        // implementation of zip other than the workbook's own (Sources/Workbook/ZipFile.swift).
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
    ],
    targets: [
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The workbook's deflating: Sources/Workbook/Deflate.swift.
        .systemLibrary(name: "CLibZ", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "Postgres", dependencies: ["CLibPQ"], swiftSettings: v6),
        .target(name: "HTTP", dependencies: ["CCurl"], swiftSettings: v6),
        .target(name: "Reconciliation", swiftSettings: v6),
        // The reports for people: the workbook and the one-page summary. Both only
        // read what the report writer already produced, so the lead wires them in after the CSVs.
        .target(
            name: "Workbook",
            dependencies: ["Reconciliation", "CLibZ"],
            swiftSettings: v6
        ),
        .target(name: "SummaryPage", dependencies: ["Reconciliation"], swiftSettings: v6),
        // StrictJSON: one strict reading of a store's JSON (a tape over the bytes: no duplicate
        // key, no invalid UTF-8, nothing after the value) and the writer of request bodies.
        .target(name: "StrictJSON", swiftSettings: v6),
        .target(
            name: "AppStore",
            dependencies: [
                "Reconciliation", "StrictJSON",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                // App receipts: RSA PKCS#1 v1.5 signatures (Receipt/AppReceiptVerifier.swift).
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: v6
        ),
        // PlayStore: Google Play's protocols as AppStore is Apple's: the service account's key and
        // OAuth assertion, the Play Developer API's paths and the strict reading of its answers. No I/O.
        .target(
            name: "PlayStore",
            dependencies: [
                "Reconciliation", "StrictJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                // RS256 assertions (ServiceAccount.swift).
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: v6
        ),
        // The job, one target per seam; each uses only those listed after it in ARCHITECTURE.md
        // (Desk → NightReview → NightDecide → NightLearn → StoreIO → JobStore).
        // JobStore: the job's own schema (migrations, checksums, Apple's transaction columns).
        .target(
            name: "JobStore",
            dependencies: [
                "Postgres",
                // The migrations' checksums (schema_migrations.checksum).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: v6
        ),
        // TransportCore: what the transport decides (budgets, retries, 401 doubts, the outage
        // breaker) as a state machine, with neither a socket nor a clock.
        .target(
            name: "TransportCore",
            dependencies: [
                "JobStore", "AppStore", "PlayStore", "Reconciliation",
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "HeapModule", package: "swift-collections"),
            ],
            swiftSettings: v6
        ),
        // StoreIO: the one transport to a store's endpoints: the machine's driver over libcurl.
        .target(
            name: "StoreIO",
            dependencies: ["TransportCore", "JobStore", "AppStore", "PlayStore", "StrictJSON", "HTTP", "Reconciliation"],
            swiftSettings: v6
        ),
        // NightLearn: what the night learns from outside (verification, sweeps, sales reports),
        // the run's settings and the source rows' checks.
        .target(
            name: "NightLearn",
            dependencies: [
                "StoreIO", "TransportCore", "JobStore", "AppStore", "PlayStore", "Reconciliation", "Postgres", "HTTP",
                // Apple's sales reports come gzip-compressed (SalesReports/Gzip.swift).
                "CLibZ",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "DequeModule", package: "swift-collections"),
            ],
            swiftSettings: v6
        ),
        // PlayNight: Google Play's part of the decide stage, the rule book's Play rules over what
        // Google said and the shop's Play rows.
        .target(
            name: "PlayNight",
            dependencies: ["NightLearn", "JobStore", "Reconciliation", "Postgres", .product(name: "Logging", package: "swift-log")],
            swiftSettings: v6
        ),
        // NightDecide: the night as a plan, its copies, decisions and reports; check and release.
        .target(
            name: "NightDecide",
            dependencies: [
                "PlayNight", "NightLearn", "StoreIO", "TransportCore", "JobStore", "AppStore", "Reconciliation", "Postgres",
                "Workbook", "SummaryPage",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: v6
        ),
        // NightReview: the night seen from outside it: check before it, release after it, and a
        // few families decided as the night would (lookup, respond and check use it).
        .target(
            name: "NightReview",
            dependencies: [
                "NightDecide", "NightLearn", "StoreIO", "TransportCore", "JobStore", "AppStore", "Reconciliation", "Postgres",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: v6
        ),
        // Desk: the commands that answer people and Apple between nights (lookup, respond).
        .target(
            name: "Desk",
            dependencies: [
                "NightReview", "NightDecide", "PlayNight", "NightLearn", "PlayStore", "StoreIO", "TransportCore", "JobStore", "AppStore", "HTTP",
                "Reconciliation", "Postgres",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: v6
        ),
        .executableTarget(
            name: "iap-reconcile",
            dependencies: [
                "Desk", "NightReview", "NightDecide", "NightLearn", "StoreIO", "TransportCore", "JobStore", "HTTP", "AppStore", "Reconciliation",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: v6,
            plugins: ["BuildCommit"]
        ),
        // `iap-reconcile --version` prints the commit the build was made from.
        .plugin(name: "BuildCommit", capability: .buildTool(), path: "Plugins/BuildCommit"),
        .target(
            name: "AppStoreSimulator",
            dependencies: [
                // CLibZ: the sales reports' gzip (Server/Gzip.swift).
                "Reconciliation", "Postgres", "AppStore", "CLibZ",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The receipt PKI's RSA keys (PKI/ReceiptPKI.swift).
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: v6
        ),
        // Google Play on loopback: the token endpoint, the Play Developer API and Pub/Sub, served
        // from a truth of Play purchases; no socket of its own (AppStoreSimulator's server routes to it).
        .target(
            name: "PlaySimulator",
            dependencies: [
                "PlayStore", "StrictJSON", "Reconciliation",
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: v6
        ),
        // The data generator: seeded source rows, the truth of every purchase, expected reports.
        .target(
            name: "SimulatorData",
            dependencies: ["AppStoreSimulator", "Reconciliation", "Postgres", "AppStore", "PlaySimulator"],
            swiftSettings: v6
        ),
        .executableTarget(
            name: "iap-sim",
            dependencies: [
                "AppStoreSimulator", "SimulatorData", "PlaySimulator", "PlayStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: v6
        ),
        // The answer parser under libFuzzer (`make fuzz-build`); a corpus replayer otherwise.
        .executableTarget(name: "iap-fuzz", dependencies: ["AppStore"], path: "Tests/Fuzz", exclude: ["corpus"],
                          swiftSettings: v6),
        // The rules the night decides in SQL over every row at once (whose purchase, quiet families),
        // said plainly for the tests that hold the SQL to them.
        .target(name: "RuleOracles", dependencies: ["Reconciliation"], path: "Tests/RuleOracles", swiftSettings: v6),
        .testTarget(
            name: "ReconciliationTests", dependencies: ["Reconciliation", "RuleOracles", "AppStoreSimulator", "SimulatorData"],
            swiftSettings: v6),
        .testTarget(
            name: "WorkbookTests",
            dependencies: ["Workbook", "Reconciliation", "XLSXReading", .product(name: "ZIPFoundation", package: "ZIPFoundation")],
            swiftSettings: v6
        ),
        .testTarget(name: "SummaryPageTests", dependencies: ["SummaryPage"], swiftSettings: v6),
        // The transport's state machine on a fake clock: links neither HTTP nor the simulator.
        .testTarget(
            name: "TransportCoreTests", dependencies: ["TransportCore", "AppStore", "PlayStore", "Reconciliation", "JobStore"],
            swiftSettings: v6),
        .testTarget(name: "HTTPTests", dependencies: ["HTTP", "CCurl"], swiftSettings: v6),
        // The Play simulator over real HTTP (AppStoreSimulator's server routing to it).
        .testTarget(
            name: "PlaySimulatorTests",
            dependencies: ["PlaySimulator", "PlayStore", "AppStoreSimulator", "Reconciliation",
                           .product(name: "_CryptoExtras", package: "swift-crypto")],
            swiftSettings: v6),
        // Google Play's protocols, no I/O: keys, assertions, hostile answers.
        .testTarget(
            name: "PlayStoreTests",
            dependencies: ["PlayStore", "Reconciliation", .product(name: "_CryptoExtras", package: "swift-crypto")],
            swiftSettings: v6),
        // Reads a workbook back (unzip, parse the XML) for the workbook's tests and the end-to-end ones.
        .target(name: "XLSXReading", dependencies: [.product(name: "ZIPFoundation", package: "ZIPFoundation")],
                path: "Tests/XLSXReading", swiftSettings: v6),
        .testTarget(
            name: "AppStoreTests",
            dependencies: [
                "AppStore", "Reconciliation", "AppStoreSimulator", "SimulatorData",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            resources: [.copy("Fixtures")], swiftSettings: v6
        ),
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "Desk", "NightReview", "NightDecide", "NightLearn", "StoreIO", "TransportCore", "JobStore",
                "Postgres", "HTTP", "AppStoreSimulator", "SimulatorData", "Reconciliation", "AppStore", "XLSXReading",
                "RuleOracles", "PlayStore", "PlaySimulator", "PlayNight", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            resources: [.copy("Fixtures")], swiftSettings: v6
        ),
    ]
)
