import RichPush
import Testing

@testable import RichPushServer

/// A tenant's token as the service knows it: the SHA-256 of the bearer token, as four words.
@Suite struct TokenDigestTests {
    @Test("32 bytes read as the digest their hex spells; another count is none")
    func bytes() throws {
        let bytes = sha256Digest(of: Array("a-tenant-token".utf8))
        let hex = bytes.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
        let digest = try #require(Digest(bytes: bytes))
        #expect(digest.hex == hex)
        #expect(Digest(bytes: Array(bytes.dropLast())) == nil)
        #expect(Digest(bytes: bytes + [0]) == nil)
    }

    @Test("a digest is the same as itself only: a difference in any byte, first or last, tells them apart")
    func same() throws {
        let bytes = sha256Digest(of: Array("a-tenant-token".utf8))
        let digest = try #require(Digest(bytes: bytes))
        #expect(digest.isSame(as: try #require(Digest(bytes: bytes))))
        for index in [0, 7, 8, 15, 16, 31] {
            var changed = bytes
            changed[index] ^= 0x01
            #expect(!digest.isSame(as: try #require(Digest(bytes: changed))), "byte \(index)")
        }
    }
}
