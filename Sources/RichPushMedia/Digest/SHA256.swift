internal import CCrypto

/// A streaming SHA-256 (OpenSSL's EVP interface), fed chunk by chunk (`FileDigest` reads a stored file through it).
final class SHA256 {
    private let context: OpaquePointer

    init() {
        // Allocation failure of a few hundred bytes is not an input error: treat it as fatal.
        guard let context = ccrypto_sha256_new() else { fatalError("OpenSSL could not create a SHA-256 context") }
        self.context = context
    }

    deinit { ccrypto_sha256_free(context) }

    /// EVP_DigestUpdate.
    func update(_ bytes: UnsafeRawBufferPointer) {
        ccrypto_sha256_update(context, bytes.baseAddress, bytes.count)
    }

    /// EVP_DigestFinal_ex, as its 32 bytes. Call once (or `finalize()`).
    func finalizeBytes() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        ccrypto_sha256_final(context, &digest)
        return digest
    }

    /// EVP_DigestFinal_ex, as lowercase hex. Call once.
    func finalize() -> String {
        let digest = finalizeBytes()
        let hex = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(64)
        for byte in digest {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

@available(*, unavailable)
extension SHA256: Sendable {}

/// The SHA-256 of `bytes`, as 32 bytes (a tenant's token, which the service knows only by its digest).
package func sha256Digest(of bytes: [UInt8]) -> [UInt8] {
    let context = SHA256()
    bytes.withUnsafeBytes { context.update($0) }
    return context.finalizeBytes()
}
