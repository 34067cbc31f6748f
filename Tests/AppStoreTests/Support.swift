import AppStore
import Foundation
import Reconciliation
import Testing

/// Fixture bodies: real verifyReceipt answers from the seeds, turned into JSON with their mix of
/// strings and numbers kept (see Fixtures/).
enum Fixture {
    static func bytes(_ name: String) throws -> [UInt8] {
        let url = try #require(
            Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"),
            "missing fixture \(name).json")
        return [UInt8](try Data(contentsOf: url))
    }

    static let all = [
        "big_ids", "ios6_auto_renewable", "ios6_auto_renewable_expired_info", "ios6_non_renewing",
        "ios6_non_renewing_refunded", "ios7_all_numbers", "ios7_all_strings", "ios7_auto_renewable",
        "ios7_empty_in_app", "ios7_missing_fields", "ios7_refunded", "status_21006_expired",
    ]
}

/// Classifies a body as an HTTP 200 answer from production.
func classify(_ body: [UInt8], environment: AppStoreEnvironment = .production,
              allowedBundles: Set<String> = []) -> Answer {
    VerifyReceipt.classify(httpStatus: 200, body: body, environment: environment, allowedBundles: allowedBundles)
}

func classify(_ json: String, environment: AppStoreEnvironment = .production,
              allowedBundles: Set<String> = []) -> Answer {
    classify(Array(json.utf8), environment: environment, allowedBundles: allowedBundles)
}

func fixture(_ name: String, environment: AppStoreEnvironment = .production,
             allowedBundles: Set<String> = []) throws -> Answer {
    classify(try Fixture.bytes(name), environment: environment, allowedBundles: allowedBundles)
}

extension Answer {
    func transaction(_ id: String) -> AppleTransaction? {
        transactions.first { $0.transactionID == id }
    }
}
