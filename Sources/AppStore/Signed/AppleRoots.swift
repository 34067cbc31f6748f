// The root Apple signs StoreKit 2 transactions under, embedded so that the job needs no file for
// the usual case, and the loading of other roots (`IAP_ROOT_CERTIFICATES`, e.g. the simulator's).

import Foundation
import SwiftASN1
import X509

extension SignedDataVerifier {
    /// Apple Root CA - G3 (P-384, valid 2014-04-30 to 2039-04-30), as Apple
    /// publishes it (www.apple.com/certificateauthority, AppleRootCA-G3.cer). SHA-256 fingerprint
    /// 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79,
    /// checked by a unit test (`SignedTransactionTests.embeddedAppleRoot`).
    static let appleRootCAG3PEM = """
    -----BEGIN CERTIFICATE-----
    MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwS
    QXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9u
    IEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcN
    MTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBS
    b290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9y
    aXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49
    AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf
    TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517
    IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySr
    MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gA
    MGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4
    at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM
    6BgD56KyKA==
    -----END CERTIFICATE-----
    """

    /// Apple Root CA - G3, the default trust anchor (contract §2). The literal above is a constant
    /// of this source, checked by a test; it is not input, so failing to parse it is a build defect.
    public static let appleRootCAG3: Certificate = {
        do {
            return try Certificate(pemEncoded: appleRootCAG3PEM)
        } catch {
            fatalError("the embedded Apple Root CA - G3 does not parse: \(error)")
        }
    }()

    /// Why a root certificate file cannot be used. Names the file; never quotes its content.
    public struct RootCertificateError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var problem: String
        /// The variable that named the file (`IAP_ROOT_CERTIFICATES`, `IAP_RECEIPT_ROOT_CERTIFICATES`).
        public var variable = "IAP_ROOT_CERTIFICATES"

        public var description: String { "\(variable): \(path): \(problem)" }
    }

    /// The roots named by `IAP_ROOT_CERTIFICATES`: a comma-separated list of files, each holding
    /// one or more PEM certificates (`-----BEGIN CERTIFICATE-----`) or one DER certificate (Apple
    /// publishes its roots as DER `.cer`). Blanks around names are ignored; an empty list, an
    /// unreadable file, a file over 1 MiB or anything that is not a certificate throws, naming the file.
    /// `variable` names the setting in the error (the receipts' roots use the same files' form).
    public static func roots(fromPEMFiles paths: String, variable: String = "IAP_ROOT_CERTIFICATES") throws -> [Certificate] {
        let names = paths.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !names.isEmpty else { throw RootCertificateError(path: paths, problem: "names no file", variable: variable) }
        var roots: [Certificate] = []
        for name in names {
            do {
                roots.append(contentsOf: try certificates(inFile: name))
            } catch var error as RootCertificateError {
                error.variable = variable
                throw error
            }
        }
        return roots
    }

    private static func certificates(inFile path: String) throws -> [Certificate] {
        func fail(_ problem: String) -> RootCertificateError { RootCertificateError(path: path, problem: problem) }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { throw fail("no such file") }
        guard !isDirectory.boolValue else { throw fail("is a directory") }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw fail("cannot be read") }
        defer { try? handle.close() }
        let limit = 1 << 20
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw fail("cannot be read")
        }
        guard data.count <= limit else { throw fail("is larger than 1 MiB") }
        guard !data.isEmpty else { throw fail("is empty") }
        let bytes = [UInt8](data)
        if bytes.first == 0x30 {
            do {
                return [try Certificate(derEncoded: bytes)]
            } catch {
                throw fail("is not a DER X.509 certificate")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self), text.contains("-----BEGIN ") else {
            throw fail("is not a PEM certificate file")
        }
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: text)
        } catch {
            throw fail("is not a PEM certificate file")
        }
        guard !documents.isEmpty else { throw fail("holds no certificate") }
        return try documents.enumerated().map { index, document in
            guard document.discriminator == "CERTIFICATE" else {
                throw fail("PEM block \(index + 1) is not a CERTIFICATE")
            }
            do {
                return try Certificate(derEncoded: document.derBytes)
            } catch {
                throw fail("PEM block \(index + 1) is not a valid X.509 certificate")
            }
        }
    }
}
