import Foundation
import Testing

/// The tests' S3 store (`SeaweedFS`, in RichPushTestSupport) is what the publisher's tests will trust: each test here
/// proves one thing they rely on, against a `weed server` of its own. Serialized: each server is ~110-210 MB and a
/// few seconds of both cores to start.
@Suite("Test support: the tests' SeaweedFS S3 store", .serialized)
struct SeaweedFSTests {
    static let bucket = "media"
    static let bytes: [UInt8] = Array("\u{89}PNG not really, but bytes all the same".utf8) + [0, 1, 2, 255]
    static let cacheControl = "public, max-age=31536000, immutable"

    /// A new server with `bucket` made.
    static func store() async throws -> SeaweedFS {
        let store = try await SeaweedFS(readableBucket: bucket)
        try await store.createBucket(bucket)
        return store
    }

    /// The publisher's PUT of `bytes` to `key`, typed and cached as the publisher will.
    static func put(
        _ store: SeaweedFS, _ key: String, as identity: SeaweedFS.Identity?, headers: [(String, String)] = []
    )
        async throws -> HTTPReply
    {
        try await store.request(
            "PUT", "/\(bucket)/\(key)", as: identity,
            headers: [("Content-Type", "image/png"), ("Cache-Control", cacheControl)] + headers, body: bytes)
    }

    @Test("a signed PUT is read back with its bytes, its Content-Type and its Cache-Control, and listed")
    func signedPutThenGet() async throws {
        let store = try await Self.store()
        // A key without an extension: SeaweedFS stores a missing or application/octet-stream type as the key's
        // extension's (image/png for .png), which would hide a Content-Type that was not sent.
        let put = try await Self.put(store, "p/object", as: store.publisher)
        #expect(put.status == 200, "\(put.text)")
        let object = try await store.object(Self.bucket, "p/object")
        #expect(object.status == 200)
        #expect(object.body == Self.bytes)
        #expect(object.headers["content-type"] == "image/png")
        #expect(object.headers["cache-control"] == Self.cacheControl)
        let head = try await store.object(Self.bucket, "p/object", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == String(Self.bytes.count))
        #expect(head.headers["content-type"] == "image/png")
        #expect(try await store.keys(in: Self.bucket) == ["p/object"])
    }

    @Test("an unsigned PUT is refused with AccessDenied, and nothing is stored")
    func unsignedPut() async throws {
        let store = try await Self.store()
        let put = try await Self.put(store, "p/unsigned.png", as: nil)
        #expect(put.status == 403)
        #expect(put.s3ErrorCode == "AccessDenied", "\(put.text)")
        #expect(try await store.keys(in: Self.bucket) == [])
    }

    @Test("a PUT signed with a wrong secret is refused with SignatureDoesNotMatch, and nothing is stored")
    func wrongSecret() async throws {
        let store = try await Self.store()
        let wrong = SeaweedFS.Identity(
            accessKey: store.publisher.accessKey, secretKey: "not-" + store.publisher.secretKey)
        let put = try await Self.put(store, "p/wrong.png", as: wrong)
        #expect(put.status == 403)
        #expect(put.s3ErrorCode == "SignatureDoesNotMatch", "\(put.text)")
        #expect(try await store.keys(in: Self.bucket) == [])
    }

    @Test(
        """
        the reader's PUT into the bucket it may read is refused with AccessDenied, while its GET of an object there \
        is served
        """)
    func readerMayNotWrite() async throws {
        let store = try await Self.store()
        #expect(try await Self.put(store, "p/a.png", as: store.publisher).status == 200)
        let read = try await store.object(Self.bucket, "p/a.png", as: store.reader)
        #expect(read.status == 200)
        #expect(read.body == Self.bytes)
        let put = try await Self.put(store, "p/reader.png", as: store.reader)
        #expect(put.status == 403)
        #expect(put.s3ErrorCode == "AccessDenied", "\(put.text)")
        #expect(try await store.keys(in: Self.bucket) == ["p/a.png"])
    }

    @Test("a PUT whose x-amz-checksum-sha256 is not the body's is refused with BadDigest, and nothing is stored")
    func wrongChecksum() async throws {
        let store = try await Self.store()
        // The base64 SHA-256 of "other", not of the body.
        let other = "2SmKENGwc1g33EvYXaxkGw887yekfl1TpU8vP1svz/o="
        let put = try await Self.put(
            store, "p/corrupt.png", as: store.publisher, headers: [("x-amz-checksum-sha256", other)])
        #expect(put.status == 400)
        #expect(put.s3ErrorCode == "BadDigest", "\(put.text)")
        #expect(try await store.keys(in: Self.bucket) == [])
    }

    @Test(
        """
        stopped, the store refuses connections; restarted on the same port and directory, it serves what it stored \
        before and takes new objects
        """)
    func stopAndRestart() async throws {
        let store = try await Self.store()
        #expect(try await Self.put(store, "p/before.png", as: store.publisher).status == 200)
        let endpoint = store.endpoint
        await store.stop()
        await #expect(throws: ServeFailure.self) { try await store.object(Self.bucket, "p/before.png") }
        // Stopped, its ports are still its own: no other socket binds them (the kernel then gives them to no socket
        // bound to port 0, a test origin's), until it starts again.
        for port in store.ports.all {
            #expect(!canBind(port), "port \(port) of the stopped store could be bound")
        }
        try await store.restart()
        #expect(store.endpoint == endpoint)
        let object = try await store.object(Self.bucket, "p/before.png")
        #expect(object.status == 200)
        #expect(object.body == Self.bytes)
        #expect(object.headers["content-type"] == "image/png")
        #expect(try await Self.put(store, "p/after.png", as: store.publisher).status == 200)
        #expect(try await store.keys(in: Self.bucket) == ["p/after.png", "p/before.png"])
    }

    @Test(
        """
        released, the store leaves nothing behind: its port refuses connections, its directory and the gRPC sockets \
        weed put in /tmp are gone
        """)
    func cleanup() async throws {
        var store: SeaweedFS? = try await Self.store()
        let (directory, ports) = try #require(store.map { ($0.directory, $0.ports) })
        let sockets = [
            "master-grpc-\(ports.masterGRPC)", "volume-grpc-\(ports.volumeGRPC)", "filer-grpc-\(ports.filerGRPC)",
            "s3-grpc-\(ports.s3GRPC)",
        ].map { "/tmp/seaweedfs-\($0).sock" }
        #expect(sockets.allSatisfy { FileManager.default.fileExists(atPath: $0) })
        store = nil
        #expect(!FileManager.default.fileExists(atPath: directory))
        #expect(sockets.allSatisfy { !FileManager.default.fileExists(atPath: $0) })
        #expect(throws: ServeFailure.self) { try HTTPConnection(port: ports.s3) }
    }
}
