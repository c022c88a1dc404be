import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushMedia
@testable import RichPushObjectStore

/// `ObjectStorePublisher` against a real S3 store: SeaweedFS on loopback, signatures required (`SeaweedFS`).
@Suite("ObjectStorePublisher: uploads to a real S3 store (SeaweedFS)", .offPool, .timeLimit(.minutes(3)))
struct ObjectStorePublisherTests {
    static let base = "https://cdn.example.com/media"

    /// A publisher into `bucket` (prefix `push`) of `store`, as `identity` (the store's publisher by default).
    static func publisher(
        _ store: SeaweedFS, bucket: String = "media", identity: SeaweedFS.Identity? = nil,
        _ adjust: (inout ObjectStorePublisher.Configuration) -> Void = { _ in }
    ) throws -> ObjectStorePublisher {
        let identity = identity ?? store.publisher
        var configuration = try ObjectStorePublisher.Configuration(
            location: "s3://\(bucket)/push", publicBaseURL: base,
            credentials: ObjectStoreCredentials(accessKeyID: identity.accessKey, secretAccessKey: identity.secretKey))
        configuration.endpoint = store.endpoint
        configuration.pathStyle = true
        adjust(&configuration)
        return try ObjectStorePublisher(configuration)
    }

    /// A publisher into bucket `media` of a store at `endpoint` (one no test starts: nothing is stored there).
    static func publisher(endpoint: String) throws -> ObjectStorePublisher {
        var configuration = try ObjectStorePublisher.Configuration(
            location: "s3://media/push", publicBaseURL: base,
            credentials: ObjectStoreCredentials(accessKeyID: "AKIDTEST", secretAccessKey: "secret"))
        configuration.endpoint = endpoint
        configuration.pathStyle = true
        return try ObjectStorePublisher(configuration)
    }

    /// `bytes` in a file of their own, described as an attachment of `type` named by their SHA-256 (or by `sha256`).
    static func media(_ bytes: [UInt8], type: MediaType, sha256: String? = nil) throws -> FetchedMedia {
        let path = try temporaryDirectory() + "/attachment." + type.fileExtension
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let digest = try FileDigest.of(path).get()
        return FetchedMedia(
            path: path, directory: "", type: type, bytes: bytes.count, sha256: sha256 ?? digest.sha256)
    }

    /// 64 MB, an upload that outlasts a short deadline: a 1 MiB random block 64 times, copied whole (generating
    /// 64 MiB word by word, or joining the blocks element by element, cost tens of seconds of CPU in a debug build
    /// beside the rest of a full run).
    static func sixtyFourMegabytes(seed: UInt64) -> [UInt8] {
        var random = SplitMix64(seed: seed)
        let block = (0..<(1 << 20) / 8).map { _ in random.next() }.withUnsafeBytes { Array($0) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 * block.count)
        for _ in 0..<64 { bytes.append(contentsOf: block) }
        return bytes
    }

    static func publish(_ publisher: ObjectStorePublisher, _ media: FetchedMedia, within limit: Duration = .seconds(30))
        async -> Result<String, PublishFailure>
    {
        await publisher.published(media, deadline: .now + limit)
    }

    @Test(
        """
        an upload is readable back with its bytes, its sniffed type and Cache-Control; the same bytes again are a hit, \
        asked of the store by a new publisher and remembered by the same one
        """)
    func uploadThenHit() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let publisher = try Self.publisher(store, bucket: bucket)
        let media = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let key = "push/\(media.sha256).jpg"
        #expect(try await Self.publish(publisher, media).get() == "\(Self.base)/\(key)")
        let object = try await store.object(bucket, key)
        #expect(object.status == 200)
        #expect(object.body == fixture("photo.jpg"))
        #expect(object.headers["content-type"] == "image/jpeg")
        #expect(object.headers["cache-control"] == "public, max-age=31536000, immutable")
        var statistics = try #require(publisher.statistics)
        #expect(statistics.uploads == 1 && statistics.uploadedBytes == media.bytes && statistics.hits == 0)
        #expect(statistics.durationCounts.reduce(0, +) == 1)

        // Gone from the store: the same publisher remembers it and asks nothing (the store is not asked, so it
        // stays gone); a new publisher asks, finds it missing and uploads it again.
        #expect(try await store.request("DELETE", "/\(bucket)/" + key).status == 204)
        #expect(try await Self.publish(publisher, media).get() == "\(Self.base)/\(key)")
        statistics = try #require(publisher.statistics)
        #expect(statistics.uploads == 1 && statistics.hits == 1, "remembered: not uploaded again")
        #expect(try await store.object(bucket, key).status == 404, "remembered: the store was not asked")
        let again = try Self.publisher(store, bucket: bucket)
        #expect(try await Self.publish(again, media).get() == "\(Self.base)/\(key)")
        #expect(again.statistics?.uploads == 1 && again.statistics?.hits == 0)

        let fresh = try Self.publisher(store, bucket: bucket) { $0.cacheControl = "public, max-age=60" }
        #expect(try await Self.publish(fresh, media).get() == "\(Self.base)/\(key)")
        #expect(fresh.statistics?.uploads == 0 && fresh.statistics?.hits == 1, "found by HEAD: not uploaded again")
        #expect(try await store.object(bucket, key).headers["cache-control"] == "public, max-age=31536000, immutable")
        #expect(try await store.keys(in: bucket) == [key])
    }

    @Test(
        """
        with if-none-match, a new key is stored by the conditional PUT alone, and a key the store has is a hit \
        (412) that leaves the stored object as it was, where a HEAD of another length would have rewritten it
        """)
    func conditionalPut() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let publisher = try Self.publisher(store, bucket: bucket) { $0.existenceCheck = .ifNoneMatch }
        let media = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let key = "push/\(media.sha256).jpg"
        #expect(try await Self.publish(publisher, media).get() == "\(Self.base)/\(key)")
        let object = try await store.object(bucket, key)
        #expect(object.body == fixture("photo.jpg") && object.headers["content-type"] == "image/jpeg")
        #expect(publisher.statistics?.uploads == 1 && publisher.statistics?.hits == 0)

        // Other bytes under a key: `head` finds another length and uploads; the conditional PUT is refused (412),
        // counted as a hit, and the object is not touched.
        let other = try Self.media(fixture("logo.png"), type: .png)
        let taken = "push/\(other.sha256).png"
        let stand = Array("not the logo".utf8)
        #expect(try await store.request("PUT", "/\(bucket)/\(taken)", body: stand).status == 200)
        let fresh = try Self.publisher(store, bucket: bucket) { $0.existenceCheck = .ifNoneMatch }
        #expect(try await Self.publish(fresh, other).get() == "\(Self.base)/\(taken)")
        #expect(
            fresh.statistics?.uploads == 0 && fresh.statistics?.hits == 1, "\(String(describing: fresh.statistics))")
        #expect(try await store.object(bucket, taken).body == stand)
        let heads = try Self.publisher(store, bucket: bucket)
        #expect(try await Self.publish(heads, other).get() == "\(Self.base)/\(taken)")
        #expect(heads.statistics?.uploads == 1, "a HEAD finds another length and uploads")
        #expect(try await store.object(bucket, taken).body == fixture("logo.png"))
    }

    @Test(
        """
        auto (the default): HEADs while they find keys; after 16 that found nothing the upload is conditional (a \
        412 leaves the stored object), and that 412 brings the HEAD back (another length found: rewritten)
        """)
    func autoExistenceCheck() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let publisher = try Self.publisher(store, bucket: bucket)
        #expect(publisher.configuration.existenceCheck == .auto)
        var random = SplitMix64(seed: 7)
        for _ in 0..<ExistenceState.missesBeforeConditional {
            let media = try Self.media((0..<64).map { _ in UInt8.random(in: 0...255, using: &random) }, type: .jpeg)
            _ = try await Self.publish(publisher, media).get()
        }
        #expect(publisher.statistics?.uploads == ExistenceState.missesBeforeConditional)
        // Other bytes under the next two keys: the first is met by a conditional PUT (412, kept as it was), the
        // second, after that 412, by a HEAD that finds another length (uploaded over it).
        let stand = Array("not the image".utf8)
        let first = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let second = try Self.media(fixture("logo.png"), type: .png)
        for media in [first, second] {
            let key = publisher.key(for: media)
            #expect(try await store.request("PUT", "/\(bucket)/\(key)", body: stand).status == 200)
        }
        _ = try await Self.publish(publisher, first).get()
        #expect(try await store.object(bucket, publisher.key(for: first)).body == stand, "conditional: a 412")
        #expect(publisher.statistics?.hits == 1)
        _ = try await Self.publish(publisher, second).get()
        #expect(try await store.object(bucket, publisher.key(for: second)).body == fixture("logo.png"), "a HEAD")
        #expect(publisher.statistics?.uploads == ExistenceState.missesBeforeConditional + 1)
    }

    @Test("auto asks with a HEAD every 256th upload while uploads are conditional")
    func autoProbes() {
        var state = ExistenceState()
        var pattern: [Bool] = []
        for _ in 0..<ExistenceState.missesBeforeConditional {
            pattern.append(state.nextIsConditional())
            state.missed()
        }
        #expect(pattern == Array(repeating: false, count: ExistenceState.missesBeforeConditional))
        var heads = 0
        for _ in 0..<(2 * ExistenceState.probeEvery) where !state.nextIsConditional() { heads += 1 }
        #expect(heads == 2, "one HEAD in each \(ExistenceState.probeEvery)")
        state.found()
        let afterFound = state.nextIsConditional()
        #expect(!afterFound)
    }

    @Test("twenty payloads meeting one image at once make one upload; the other nineteen wait for it")
    func oneFlight() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let publisher = try Self.publisher(store, bucket: bucket)
        let media = try Self.media(fixture("anim.gif"), type: .gif)
        let urls = await withTaskGroup(of: Result<String, PublishFailure>.self) { group in
            for _ in 0..<20 { group.addTask { await Self.publish(publisher, media) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(urls.map { try? $0.get() }) == ["\(Self.base)/push/\(media.sha256).gif"])
        let statistics = try #require(publisher.statistics)
        #expect(statistics.uploads == 1 && statistics.hits == 19, "\(statistics)")
        #expect(try await store.keys(in: bucket) == ["push/\(media.sha256).gif"])
    }

    @Test(
        """
        the store's refusals come back with its codes, nothing is stored, and no message holds the secret: a wrong \
        secret, an identity that may not write, a missing bucket, a body that is not what its hash says
        """)
    func refusals() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let media = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let wrong = SeaweedFS.Identity(accessKey: store.publisher.accessKey, secretKey: "not-the-secret-at-all")
        let cases: [(ObjectStorePublisher, FetchedMedia, String)] = [
            (try Self.publisher(store, bucket: bucket, identity: wrong), media, "SignatureDoesNotMatch"),
            (try Self.publisher(store, bucket: bucket, identity: store.reader), media, "AccessDenied"),
            (try Self.publisher(store, bucket: bucket + "-missing"), media, "NoSuchBucket"),
            // Named by another file's hash: the store checks x-amz-checksum-sha256 against the bytes it received.
            (
                try Self.publisher(store, bucket: bucket),
                try Self.media(fixture("photo.jpg"), type: .jpeg, sha256: String(repeating: "ab", count: 32)),
                "BadDigest"
            ),
        ]
        for (publisher, media, code) in cases {
            let failure = try #require(
                await Self.publish(publisher, media).failure, "\(code): published, and should not have been")
            #expect(failure.code == code, "\(failure.detail)")
            #expect(failure.detail.contains(code) && failure.detail.contains("HTTP 4"), "\(failure.detail)")
            #expect(
                !failure.detail.contains("not-the-secret-at-all") && !failure.detail.contains(store.publisher.secretKey)
            )
            #expect(publisher.statistics?.failures == [code: 1])
            #expect(publisher.statistics?.uploads == 0)
        }
        #expect(try await store.keys(in: bucket) == [], "nothing stored")
    }

    @Test("an upload longer than its deadline ends expired by the deadline, and leaves no object")
    func deadline() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let publisher = try Self.publisher(store, bucket: bucket)
        let media = try Self.media(Self.sixtyFourMegabytes(seed: 23), type: .mp4)
        let start = ContinuousClock.now
        let failure = try #require(await Self.publish(publisher, media, within: .milliseconds(100)).failure)
        #expect(failure.code == "expired", "\(failure.detail)")
        #expect(ContinuousClock.now - start < .seconds(10), "ended near its deadline, not after the upload")
        #expect(publisher.statistics?.failures == ["expired": 1])
        // The transfer itself is cut at the deadline: once the upload thread is idle, nothing was stored.
        try await waitUntil("the cut upload's thread is idle", within: .seconds(60)) { publisher.uploadsRunning == 0 }
        #expect(try await store.keys(in: bucket) == [])
    }

    @Test(
        """
        a payload waiting on another's upload of the same image, which that payload's short deadline cut, asks \
        again with its own time and publishes
        """)
    func followerOutlivesLeader() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let publisher = try Self.publisher(store, bucket: bucket)
        let media = try Self.media(Self.sixtyFourMegabytes(seed: 29), type: .mp4)
        let leader = Task { await Self.publish(publisher, media, within: .milliseconds(300)) }
        try await waitUntil("the leader's upload to run", within: .seconds(10)) { publisher.uploadsRunning == 1 }
        let follower = await Self.publish(publisher, media, within: .seconds(120))
        #expect(await leader.value.failure?.code == "expired")
        #expect(try follower.get() == "\(Self.base)/push/\(media.sha256).mp4", "\(follower)")
        #expect(try await store.keys(in: bucket) == ["push/\(media.sha256).mp4"])
    }

    @Test(
        """
        an https store with a private CA: trusted through caBundle, the upload is stored; with the system's CAs or \
        another CA, it fails tls at once, not retried, and stores nothing; an unreadable bundle is refused up front
        """)
    func privateCA() async throws {
        let store = try await SeaweedFS(tls: true)
        #expect(store.endpoint.hasPrefix("https://"))
        try await store.createBucket("media")
        let ca = try #require(store.caCertificate)
        let media = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let key = "push/\(media.sha256).jpg"

        let elsewhere = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: elsewhere) }
        let (other, otherKey) = try makeCertificate(in: elsewhere)
        for bundle in [nil, other] {
            let publisher = try Self.publisher(store) { $0.caBundle = bundle }
            let start = ContinuousClock.now
            let failure = try #require(
                await Self.publish(publisher, media).failure, "published trusting \(bundle ?? "the system's CAs")")
            #expect(failure.code == "tls", "\(failure.detail)")
            #expect(failure.detail.contains("certificate"), "\(failure.detail)")
            #expect(!failure.detail.contains("attempts"), "not retried: \(failure.detail)")
            #expect(publisher.statistics?.failures == ["tls": 1])
            #expect(ContinuousClock.now - start < .seconds(20), "failed at the handshake, not by the deadline")
        }
        #expect(try await store.keys(in: "media") == [], "nothing stored")

        let trusting = try Self.publisher(store) { $0.caBundle = ca }
        #expect(try await Self.publish(trusting, media).get() == "\(Self.base)/\(key)")
        #expect(try await store.object("media", key).body == fixture("photo.jpg"))
        #expect(trusting.statistics?.uploads == 1 && trusting.statistics?.failures == [:])

        #expect {
            var configuration = try ObjectStorePublisher.Configuration(
                location: "s3://media/push", publicBaseURL: Self.base,
                credentials: ObjectStoreCredentials(accessKeyID: "AKIDTEST", secretAccessKey: "secret"))
            configuration.endpoint = "http://127.0.0.1:9"
            configuration.pathStyle = true
            configuration.caBundle = ca
            try configuration.validate()
        } throws: { error in
            let error = error as? ConfigurationError
            return error?.field == "caBundle" && error?.code == .malformed
                && error?.detail.contains("'http://127.0.0.1:9' is not https") == true
        }
        #expect {
            _ = try Self.publisher(store) { $0.caBundle = otherKey }
        } throws: { error in
            (error as? ConfigurationError)?.field == "caBundle" && (error as? ConfigurationError)?.code == .malformed
        }
        for unreadable in [elsewhere + "/missing.pem", elsewhere] {
            #expect {
                _ = try Self.publisher(store) { $0.caBundle = unreadable }
            } throws: { error in
                let error = error as? ConfigurationError
                return error?.field == "caBundle" && error?.code == .unreadable
                    && error?.detail.contains(unreadable) == true
            }
        }
    }

    /// A listener on loopback that hands each connection, one at a time, to `handle` (with a function that counts
    /// it, called before the client can see the answer), then closes it; on a thread of its own, which ends when the
    /// listener is closed.
    final class LoopbackListener: @unchecked Sendable {
        let port: Int
        private let listener: Int32
        private let counted = LockedValue(0)
        var count: Int { counted.withLock { $0 } }

        init(_ handle: @escaping @Sendable (Int32, _ count: () -> Void) -> Void) throws {
            (listener, port) = try loopbackSocket()
            guard listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
            let (listener, counted) = (listener, counted)
            Thread.detachNewThread {
                while true {
                    let connection = accept(listener, nil, nil)
                    guard connection >= 0 else {
                        // Closed here, not in deinit: a descriptor closed under the thread's accept could be
                        // another test's listener by the time it calls accept again.
                        close(listener)
                        return
                    }
                    handle(connection) { counted.withLock { $0 += 1 } }
                    close(connection)
                }
            }
        }

        deinit { shutdown(listener, Int32(SHUT_RDWR)) }

        /// Resets every connection once the client's first bytes (its ClientHello) arrive, counting them.
        static func handshakeDropper() throws -> LoopbackListener {
            try LoopbackListener { connection, count in
                var buffer = [UInt8](repeating: 0, count: 16)
                _ = recv(connection, &buffer, buffer.count, 0)
                var reset = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
                count()
            }
        }

        /// A store that answers every `HEAD` 404 and every `PUT` with `answer` (its status line, headers and body
        /// after the request's whole body was read, `100 Continue` first when asked), one request a connection,
        /// counting the `PUT`s.
        static func cannedStore(answer: String) throws -> LoopbackListener {
            try LoopbackListener { connection, count in
                var timeout = timeval(tv_sec: 20, tv_usec: 0)
                setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                serve(connection, answer: answer, count: count)
            }
        }

        private static func serve(_ connection: Int32, answer: String, count: () -> Void) {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            func read() -> Bool {
                let count = recv(connection, &buffer, buffer.count, 0)
                guard count > 0 else { return false }
                received += buffer[..<count]
                return true
            }
            let end = Array("\r\n\r\n".utf8)
            // At most 64 reads for a head: a client that sends less is dropped.
            for _ in 0..<64 where received.firstRange(of: end) == nil { guard read() else { return } }
            guard let headEnd = received.firstRange(of: end)?.upperBound else { return }
            let head = String(decoding: received[..<headEnd], as: UTF8.self).lowercased()
            func send(_ text: String) {
                _ = text.utf8CString.withUnsafeBytes { write(connection, $0.baseAddress, $0.count - 1) }
            }
            guard head.hasPrefix("put ") else {
                send("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            }
            count()
            let field = head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            let value = field.map { $0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces) }
            let length = value.flatMap { Int($0) } ?? 0
            if head.contains("expect: 100-continue") { send("HTTP/1.1 100 Continue\r\n\r\n") }
            // The whole body, in at most 4,096 reads.
            for _ in 0..<4_096 where received.count - headEnd < length { guard read() else { return } }
            send(answer)
        }
    }

    @Test(
        """
        a PUT answered 200 with an S3 error document is not stored: the store's code, tried again as the code says, \
        and no URL; a code holding the session token is counted by its status's code, the token hidden
        """)
    func cannedAnswers() async throws {
        let media = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let token = "ToKeNpRoBe3SESSIONabc987"
        let cases: [(answer: (String) -> String, code: String, puts: Int)] = [
            (
                { _ in Self.answer(200, "<?xml version=\"1.0\"?>\n<Error><Code>InternalError</Code></Error>") },
                "InternalError", 3
            ),
            (
                { _ in Self.answer(200, "<Error><Code>AccessDenied</Code><Message>no</Message></Error>") },
                "AccessDenied", 1
            ),
            ({ Self.answer(403, "<Error><Code>\($0)</Code><Message>\($0)</Message></Error>") }, "AccessDenied", 1),
            // A store saying it computed another digest than the one sent stored other bytes: tried again.
            (
                { _ in
                    Self.answer(
                        200, "", headers: "x-amz-checksum-sha256: " + String(repeating: "A", count: 43) + "=\r\n")
                }, "BadDigest", 3
            ),
        ]
        for (answer, code, puts) in cases {
            let store = try LoopbackListener.cannedStore(answer: answer(token))
            var configuration = try ObjectStorePublisher.Configuration(
                location: "s3://media/push", publicBaseURL: Self.base,
                credentials: ObjectStoreCredentials(
                    accessKeyID: "AKIDTEST", secretAccessKey: "secret-key-0123", sessionToken: token))
            configuration.endpoint = "http://127.0.0.1:\(store.port)"
            configuration.pathStyle = true
            let publisher = try ObjectStorePublisher(configuration)
            let failure = try #require(await Self.publish(publisher, media).failure, "published on \(answer(token))")
            #expect(failure.code == code, "\(failure.detail)")
            #expect(!failure.detail.contains(token), "\(failure.detail)")
            #expect(store.count == puts, "\(failure.detail)")
            #expect(publisher.statistics?.failures == [code: 1])
        }
        // The digest sent, said back: stored.
        let echoing = try LoopbackListener.cannedStore(
            answer: Self.answer(
                200, "", headers: "x-amz-checksum-sha256: \(ObjectStorePublisher.base64(hex: media.sha256))\r\n"))
        let trusting = try Self.publisher(endpoint: "http://127.0.0.1:\(echoing.port)")
        let published = await Self.publish(trusting, media)
        #expect(try published.get() == "\(Self.base)/push/\(media.sha256).jpg")
        #expect(echoing.count == 1)
    }

    static func answer(_ status: Int, _ body: String, headers: String = "") -> String {
        "HTTP/1.1 \(status) X\r\nContent-Type: application/xml\r\nContent-Length: \(body.utf8.count)\r\n"
            + "\(headers)Connection: close\r\n\r\n\(body)"
    }

    @Test(
        """
        an https store that resets the connection in the handshake (restarting, a balancer dropping it) is \
        unreachable, network, tried again as a dropped connection is: not tls
        """)
    func handshakeDropped() async throws {
        let dropper = try LoopbackListener.handshakeDropper()
        let publisher = try Self.publisher(endpoint: "https://127.0.0.1:\(dropper.port)")
        let media = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let failure = try #require(await Self.publish(publisher, media).failure)
        #expect(failure.code == "network", "\(failure.detail)")
        #expect(failure.detail.contains("after 3 attempts"), "\(failure.detail)")
        #expect(dropper.count == 3)
    }

    @Test("the store stopped: reported as unreachable after the retries; once it is back, the same media publishes")
    func storeStopped() async throws {
        let store = try await SeaweedFS()
        try await store.createBucket("media")
        let publisher = try Self.publisher(store)
        let first = try Self.media(fixture("photo.jpg"), type: .jpeg)
        let second = try Self.media(fixture("logo.png"), type: .png)
        _ = try await Self.publish(publisher, first).get()
        await store.stop()
        let failure = try #require(await Self.publish(publisher, second).failure)
        #expect(failure.code == "network", "\(failure.detail)")
        #expect(failure.detail.contains("after 3 attempts"), "\(failure.detail)")
        try await store.restart()
        #expect(try await Self.publish(publisher, second).get() == "\(Self.base)/push/\(second.sha256).png")
        #expect(Set(try await store.keys(in: "media")) == ["push/\(first.sha256).jpg", "push/\(second.sha256).png"])
        #expect(publisher.statistics?.uploads == 2 && publisher.statistics?.failures == ["network": 1])
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
