// Simulator receipts as Apple's app receipts: PKCS#7 signed by the receipt PKI (ReceiptPKI.swift),
// a real ASN.1 payload (environment, bundle, creation date, one in-app SET per purchase the receipt
// held when issued, Apple's empty dates), and the simulator's whole truth in a type Apple does not
// document, which the job ignores as Apple says to. So the job verifies them offline for real, and
// the simulator's verifyReceipt reads its truth back and answers as it does for a JSON token
// (21003 when the signature does not verify, as Apple would).
//
// Files beside the ES256 test PKI (PKIFiles.swift): receipt-root.pem, receipt-intermediate.pem,
// receipt-leaf.pem and their receipt-*-key.pem (PKCS#1 RSA keys: test keys, not secrets).

import AppStore
import Foundation
import Reconciliation
import X509
import _CryptoExtras

extension SimReceipt {
    /// The undocumented payload type that carries `json()`.
    public static let truthType = 9_999

    /// The receipt Apple would issue for this one: signed with `digest`, created one second after
    /// its newest purchase (as Apple issues a receipt when a purchase completes). A purchase made
    /// after the receipt (`late`) is not in it, as in `receipt.in_app`.
    public func pkcs7(pki: ReceiptPKI, digest: ReceiptSigning.Digest = .sha256) throws -> [UInt8] {
        try pki.sign(try receiptPayload(), digest: digest)
    }

    /// The payload `pkcs7` signs: the content of the receipt.
    public func receiptPayload() throws -> [UInt8] {
        let held = txs.filter { $0.late != true }
        let created = (held.map(\.pd).max() ?? 0) + 1000
        var fields = ReceiptFields(
            bundleID: bundle, creationDate: UTC.timestampMillis(created),
            environment: env == AppStoreEnvironment.sandbox.rawValue ? "ProductionSandbox" : "Production")
        fields.extra.append((Self.truthType, Array(json().utf8)))
        fields.purchases = held.map { t in
            var p = ReceiptFields.Purchase(
                productID: t.pid, transactionID: t.tid, originalTransactionID: t.otid,
                purchaseDate: UTC.timestampMillis(t.pd), originalPurchaseDate: UTC.timestampMillis(t.opd))
            p.quantity = t.qty
            if let exp = t.exp { p.expiresDate = UTC.timestampMillis(exp) }
            if let wol = t.wol, let line = Int(wol) { p.webOrderLineItemID = line }
            return p
        }
        return try fields.payload()
    }

    /// `receipt_data` of `pkcs7`: standard base64.
    public func pkcs7Token(pki: ReceiptPKI, digest: ReceiptSigning.Digest = .sha256) throws -> String {
        Data(try pkcs7(pki: pki, digest: digest)).base64EncodedString()
    }

    /// What the simulator's verifyReceipt makes of PKCS#7 bytes: the truth of a receipt whose
    /// signature and chain verify against `verifier`'s roots; otherwise nil and the status Apple
    /// gives (21003 for any failed check, 21002 for bytes it cannot read).
    public static func decode(pkcs7 bytes: [UInt8], verifier: AppReceiptVerifier) -> (SimReceipt?, status: Int?) {
        switch verifier.verify(bytes, keeping: truthType) {
        case .failure(.malformed): return (nil, 21002)
        case .failure: return (nil, 21003)
        case .success(let verified):
            guard let truth = verified.value, let receipt = try? JSONDecoder().decode(SimReceipt.self, from: Data(truth)) else {
                return (nil, 21002)
            }
            return (receipt, nil)
        }
    }
}

extension ReceiptPKI {
    static let fileNames = (
        root: "receipt-root.pem", intermediate: "receipt-intermediate.pem", leaf: "receipt-leaf.pem",
        rootKey: "receipt-root-key.pem", intermediateKey: "receipt-intermediate-key.pem", leafKey: "receipt-leaf-key.pem"
    )

    /// The receipt PKI in `directory`, created there first when missing, inconsistent or about to
    /// expire (leaf valid for less than 30 more days), under the same lock as the ES256 PKI.
    public static func loadOrCreate(directory: String, now: Date = Date()) throws -> ReceiptPKI {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw TestPKI.FileError(description: "\(directory): cannot create the PKI directory")
        }
        return try TestPKI.withLock(URL(fileURLWithPath: directory).appendingPathComponent(".pki.lock").path) {
            if let existing = try? load(directory: directory),
                existing.leaf.notValidAfter > now + 30 * 86_400, existing.leaf.notValidBefore <= now
            {
                return existing
            }
            let pki = try create(now: now)
            try pki.write(directory: directory)
            return pki
        }
    }

    /// The simulator's verifyReceipt check: the receipt PKI of `directory`'s root, the only anchor.
    public static func receiptVerifier(directory: String) throws -> AppReceiptVerifier {
        AppReceiptVerifier(roots: [try load(directory: directory).root])
    }

    /// Reads the six files; throws when one is missing or a key is not its certificate's.
    public static func load(directory: String) throws -> ReceiptPKI {
        let dir = URL(fileURLWithPath: directory)
        func text(_ name: String) throws -> String {
            do {
                return try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
            } catch {
                throw TestPKI.FileError(description: "\(dir.appendingPathComponent(name).path): cannot be read")
            }
        }
        let f = fileNames
        do {
            let root = try Certificate(pemEncoded: try text(f.root))
            let intermediate = try Certificate(pemEncoded: try text(f.intermediate))
            let leaf = try Certificate(pemEncoded: try text(f.leaf))
            let rootKey = try _RSA.Signing.PrivateKey(pemRepresentation: try text(f.rootKey))
            let intermediateKey = try _RSA.Signing.PrivateKey(pemRepresentation: try text(f.intermediateKey))
            let leafKey = try _RSA.Signing.PrivateKey(pemRepresentation: try text(f.leafKey))
            guard root.publicKey == Certificate.PublicKey(rootKey.publicKey),
                intermediate.publicKey == Certificate.PublicKey(intermediateKey.publicKey),
                leaf.publicKey == Certificate.PublicKey(leafKey.publicKey)
            else { throw TestPKI.FileError(description: "\(directory): a receipt key does not belong to its certificate") }
            return ReceiptPKI(
                root: root, intermediate: intermediate, leaf: leaf, rootKey: rootKey, intermediateKey: intermediateKey,
                leafKey: leafKey)
        } catch let e as TestPKI.FileError {
            throw e
        } catch {
            throw TestPKI.FileError(description: "\(directory): a receipt PKI file is not a PEM certificate or RSA key")
        }
    }

    /// Writes the six files, each atomically, the root last.
    public func write(directory: String) throws {
        let dir = URL(fileURLWithPath: directory)
        let f = Self.fileNames
        let files: [(String, String)] = [
            (f.rootKey, rootKey.pemRepresentation), (f.intermediateKey, intermediateKey.pemRepresentation),
            (f.leafKey, leafKey.pemRepresentation),
            (f.leaf, try leaf.serializeAsPEM().pemString), (f.intermediate, try intermediate.serializeAsPEM().pemString),
            (f.root, try rootPEM),
        ]
        try TestPKI.write(files, in: dir)
    }
}
