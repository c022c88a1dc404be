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

    /// EVP_DigestFinal_ex, as lowercase hex. Call once.
    func finalize() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        ccrypto_sha256_final(context, &digest)
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
