import Foundation

/// A self-signed certificate for `media.test` and its key, made in `directory` (`cert.pem`, `key.pem`) by
/// `openssl req`: a test's server serves it, and the fetcher trusts it as its CA bundle. Returns their paths.
package func makeCertificate(in directory: String) throws -> (certificate: String, key: String) {
    let (certificate, key) = (directory + "/cert.pem", directory + "/key.pem")
    let made = try ChildProcess.runToEnd(
        "/usr/bin/openssl",
        [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "1",
            "-subj", "/CN=media.test", "-addext", "subjectAltName=DNS:media.test",
        ])
    guard made.status == 0 else { throw ServeFailure("openssl req exited \(made.status): \(made.errorsText)") }
    return (certificate, key)
}
