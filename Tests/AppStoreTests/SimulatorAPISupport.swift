// The simulated App Store Server API in process, on an ephemeral port, and a tiny blocking HTTP
// client over a plain socket (one request per connection), so the tests see exactly what a
// client gets: status, headers, body.

import AppStore
import AppStoreSimulator
import Foundation
import Reconciliation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct RawResponse {
    var status: Int
    /// Header names in lower case.
    var headers: [String: String]
    var body: [UInt8]

    var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] }
    var errorCode: Int? { json?["errorCode"] as? Int }
    var text: String { String(decoding: body, as: UTF8.self) }
}

struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
}

enum RawHTTP {
    static func request(port: Int, method: String, path: String, headers: [(String, String)] = [],
                        body: [UInt8] = []) throws -> RawResponse {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw RawHTTPError(description: "connect to \(port)") }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        let out = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw RawHTTPError(description: "send") }
            sent += n
        }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        guard let split = (0..<max(0, data.count - 3)).first(where: {
            data[$0] == 13 && data[$0 + 1] == 10 && data[$0 + 2] == 13 && data[$0 + 3] == 10
        }) else { throw RawHTTPError(description: "no answer (\(data.count) bytes)") }
        let lines = String(decoding: data[0..<split], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw RawHTTPError(description: "status line \(lines[0])")
        }
        var headerMap: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headerMap[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return RawResponse(status: status, headers: headerMap, body: Array(data[(split + 4)...]))
    }
}

/// A running simulator with the Server API, its PKI and the key tokens are signed with.
final class APIWorld {
    static let bundle = "com.example.game"
    static let keyID = "2X9R4HXF34"
    static let issuer = "57246542-96fe-1a63-e053-0824d011072a"
    static let day: Int64 = 86_400_000
    /// A test PKI and an API key shared by the tests (making them is the slow part).
    static let pki = try! TestPKI.create()
    static let keyPEM = APICredentials.newPrivateKeyPEM()

    let sim: Simulator
    let verifier = SignedDataVerifier(roots: [APIWorld.pki.root])
    let now = Int64(Date().timeIntervalSince1970 * 1000)

    /// `otherBundles`, `appKeys`, `refused`, `stray401`: several apps served.
    init(rows: [AppleTruthRow], rates: [SimAPIEndpoint: Int] = [:], faults: FaultPlan = FaultPlan(),
         refunds: [String: SimRefund] = [:], consumptionRate: Int? = nil, consumptionLog: String? = nil,
         otherBundles: [String] = [], appKeys: [String: AppKey] = [:], refused: Set<String> = [],
         stray401: Int? = nil) throws {
        let credentials = APICredentials(keyID: Self.keyID, issuerID: Self.issuer, bundleID: Self.bundle,
                                         publicKey: try APICredentials.publicKey(pem: Self.keyPEM),
                                         otherBundleIDs: otherBundles, appKeys: appKeys, refusedBundleIDs: refused)
        let api = ServerAPIConfig(credentials: credentials, truth: AppleTruth(rows: rows), pki: Self.pki, rates: rates,
                                  consumptionRate: consumptionRate, consumptionLogPath: consumptionLog, stray401: stray401)
        sim = try Simulator.start(SimulatorConfig(faults: faults, refunds: refunds, threads: 1, serverAPI: api))
    }

    deinit { try? sim.shutdown() }

    /// A bearer token; every part can be spoiled.
    static func token(keyPEM: String = keyPEM, kid: String = keyID, typ: String = "JWT", iss: String = issuer,
                      aud: String = "appstoreconnect-v1", bid: String = bundle, iat: Int64? = nil,
                      lifetime: Int64 = 300) throws -> String {
        let iat = iat ?? Int64(Date().timeIntervalSince1970)
        let signer = try ES256Signer(pkcs8PEM: keyPEM, keyID: kid, type: typ)
        return signer.sign(json: #"{"iss":"\#(iss)","iat":\#(iat),"exp":\#(iat + lifetime),"aud":"\#(aud)","bid":"\#(bid)"}"#)
    }

    func post(_ path: String, env: String = "production", body: String? = nil) throws -> RawResponse {
        try call(path, method: "POST", env: env, body: body)
    }

    /// `bid`: the app of the token (when `authorization` is not given).
    func call(_ path: String, method: String = "GET", env: String = "production", body: String? = nil,
              authorization: String? = nil, bid: String = APIWorld.bundle) throws -> RawResponse {
        let auth = try authorization ?? ("Bearer " + Self.token(bid: bid))
        return try RawHTTP.request(port: sim.port, method: method, path: "/\(env)\(path)",
                                   headers: auth.isEmpty ? [] : [("Authorization", auth)],
                                   body: Array((body ?? "").utf8))
    }

    /// Verifies a signed transaction against the PKI's root, as the job does.
    func verified(_ jws: Any?, bundle: String = APIWorld.bundle, sourceLocation: SourceLocation = #_sourceLocation) -> SignedTransaction? {
        guard let text = jws as? String else {
            Issue.record("not a JWS: \(String(describing: jws))", sourceLocation: sourceLocation)
            return nil
        }
        switch verifier.verifyTransaction(text, bundleIDs: [bundle]) {
        case .success(let t): return t
        case .failure(let rejection):
            Issue.record("rejected: \(rejection)", sourceLocation: sourceLocation)
            return nil
        }
    }

    /// A consumable of `customer` bought `daysAgo` days ago.
    static func row(_ tid: String, customer: String, daysAgo: Int64, now: Int64, type: ProductType = .consumable,
                    env: AppStoreEnvironment = .production, bundle: String = bundle, refund: SimRefund? = nil) -> AppleTruthRow {
        AppleTruthRow(transactionID: tid, productID: bundle + (type == .consumable ? ".coins100" : ".no_ads"), productType: type,
                      purchaseDateMs: now - daysAgo * day, environment: env, bundleID: bundle, customer: customer,
                      refund: refund)
    }
}
