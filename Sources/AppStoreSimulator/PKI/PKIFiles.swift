// The test PKI on disk, so that `iap-sim seed` (which signs the uploads) and `iap-sim serve`
// (which signs Server API answers) share one PKI, and the job trusts it through
// `IAP_ROOT_CERTIFICATES=<directory>/root.pem`.
//
// Files: root.pem, intermediate.pem, leaf.pem (certificates) and root-key.pem,
// intermediate-key.pem, leaf-key.pem (PKCS#8 keys: test keys, not secrets). Each is written to a
// temporary name and renamed into place, and the whole check-then-create runs under an exclusive
// lock on `.pki.lock`, so two processes starting together end with one PKI, never a mix.

import Crypto
import Foundation
import X509

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TestPKI {
    /// Why the PKI directory cannot be used.
    public struct FileError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    static let fileNames = (root: "root.pem", intermediate: "intermediate.pem", leaf: "leaf.pem",
                            rootKey: "root-key.pem", intermediateKey: "intermediate-key.pem", leafKey: "leaf-key.pem")

    /// The PKI in `directory`, created there first when it is missing, inconsistent (a key that is
    /// not its certificate's) or about to expire (leaf valid for less than 30 more days: the
    /// simulator signs with `signedDate` near now).
    public static func loadOrCreate(directory: String, now: Date = Date()) throws -> TestPKI {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw FileError(description: "\(directory): cannot create the PKI directory")
        }
        return try withLock(URL(fileURLWithPath: directory).appendingPathComponent(".pki.lock").path) {
            if let existing = try? load(directory: directory),
               existing.leaf.notValidAfter > now + 30 * day, existing.leaf.notValidBefore <= now {
                return existing
            }
            let pki = try create(now: now)
            try pki.write(directory: directory)
            return pki
        }
    }

    /// Reads the six files; throws when one is missing or a key does not belong to its certificate.
    public static func load(directory: String) throws -> TestPKI {
        let dir = URL(fileURLWithPath: directory)
        func text(_ name: String) throws -> String {
            do {
                return try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
            } catch {
                throw FileError(description: "\(dir.appendingPathComponent(name).path): cannot be read")
            }
        }
        func certificate(_ name: String) throws -> Certificate {
            do {
                return try Certificate(pemEncoded: try text(name))
            } catch let e as FileError {
                throw e
            } catch {
                throw FileError(description: "\(name) is not a PEM certificate")
            }
        }
        let f = fileNames
        let root = try certificate(f.root), intermediate = try certificate(f.intermediate), leaf = try certificate(f.leaf)
        let rootKey: P384.Signing.PrivateKey, intermediateKey: P384.Signing.PrivateKey, leafKey: P256.Signing.PrivateKey
        do {
            rootKey = try P384.Signing.PrivateKey(pemRepresentation: try text(f.rootKey))
            intermediateKey = try P384.Signing.PrivateKey(pemRepresentation: try text(f.intermediateKey))
            leafKey = try P256.Signing.PrivateKey(pemRepresentation: try text(f.leafKey))
        } catch let e as FileError {
            throw e
        } catch {
            throw FileError(description: "\(directory): a key file is not a PEM private key of the expected curve")
        }
        guard root.publicKey == Certificate.PublicKey(rootKey.publicKey),
              intermediate.publicKey == Certificate.PublicKey(intermediateKey.publicKey),
              leaf.publicKey == Certificate.PublicKey(leafKey.publicKey)
        else { throw FileError(description: "\(directory): a key does not belong to its certificate") }
        return try TestPKI(root: root, intermediate: intermediate, leaf: leaf, rootKey: rootKey,
                           intermediateKey: intermediateKey, leafKey: leafKey)
    }

    /// Writes the six files, each atomically (keys first, the root last: a reader that sees the
    /// new root.pem finds everything else new too).
    public func write(directory: String) throws {
        let dir = URL(fileURLWithPath: directory)
        let f = Self.fileNames
        let files: [(String, String)] = [
            (f.rootKey, rootKey.pemRepresentation), (f.intermediateKey, intermediateKey.pemRepresentation),
            (f.leafKey, leafKey.pemRepresentation),
            (f.leaf, try leaf.serializeAsPEM().pemString), (f.intermediate, try intermediate.serializeAsPEM().pemString),
            (f.root, rootPEM),
        ]
        try Self.write(files, in: dir)
    }

    /// Writes each `(name, content)` into `dir` atomically, in order (the receipt PKI's files too).
    static func write(_ files: [(String, String)], in dir: URL) throws {
        for (name, content) in files {
            let url = dir.appendingPathComponent(name)
            do {
                try Data((content + "\n").utf8).write(to: url, options: .atomic)
            } catch {
                throw FileError(description: "\(url.path): cannot be written")
            }
        }
    }

    /// Runs `body` holding an exclusive `flock` on `path` (created if missing).
    static func withLock<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw FileError(description: "\(path): cannot open the lock file") }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw FileError(description: "\(path): cannot lock") }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
}
