// A service account's JSON key file as the Cloud console downloads it, for tests and the demo
// (`iap-sim play-key`): the job signs its assertions with it, the simulator checks them with the
// same file. The key is made here and written only into the file.

import Foundation
import PlayStore
import StrictJSON
import _CryptoExtras

/// Writes service-account key files.
public enum PlayKeyFile {
    /// The account's default e-mail.
    public static let defaultEmail = "night@iap-sim.iam.gserviceaccount.com"

    /// A key file for `key`: `type` service_account, the key as PKCS#8 PEM, `private_key_id`,
    /// `client_email`, Google's `token_uri` and the console's other fields.
    public static func json(key: _RSA.Signing.PrivateKey, email: String = defaultEmail, keyID: String) -> [UInt8] {
        let project =
            email.split(separator: "@").dropFirst().first?.split(separator: ".").first.map(String.init) ?? "iap-sim"
        var w = JSONWriter(capacity: 2600)
        w.beginObject()
        w.field("type", "service_account")
        w.field("project_id", project)
        w.field("private_key_id", keyID)
        w.field("private_key", key.pkcs8PEMRepresentation + "\n")
        w.field("client_email", email)
        w.field("client_id", "10000000000000000001")
        w.field("auth_uri", "https://accounts.google.com/o/oauth2/auth")
        w.field("token_uri", GoogleOAuth.tokenURI)
        w.field("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs")
        w.field("client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/" + email)
        w.field("universe_domain", "googleapis.com")
        w.endObject()
        return w.bytes + [0x0A]
    }

    /// A key file with a new RSA-2048 key and a random 40-hex-digit key id.
    public static func new(email: String = defaultEmail) throws -> [UInt8] {
        var random = SystemRandomNumberGenerator()
        let keyID = (0..<5).map { _ in String(format: "%016llx", random.next() as UInt64) }.joined().prefix(40)
        return json(key: try _RSA.Signing.PrivateKey(keySize: .bits2048), email: email, keyID: String(keyID))
    }
}
