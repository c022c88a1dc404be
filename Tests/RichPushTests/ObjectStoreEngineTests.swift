import FixtureOrigin
import Foundation
import RichPushObjectStore
import Testing

@testable import RichPush
@testable import RichPushTransform

/// Publishing to a real S3 store (SeaweedFS on loopback) through the engine, the CLI and the service: the content
/// rewritten, objects typed by their bytes, the store's refusals reported with nothing lost, one object per image
/// whoever publishes it.
@Suite("Publishing to an S3 store through the engine, the CLI and serve", .offPool, .timeLimit(.minutes(3)))
struct ObjectStoreEngineTests {
    static let base = "https://cdn.example.com/media"

    /// The options that publish to `store`'s `bucket`, prefix `push`.
    static func options(_ store: SeaweedFS, bucket: String) -> [String] {
        [
            "--publish-s3", "s3://\(bucket)/push", "--publish-url", base, "--s3-endpoint", store.endpoint,
            "--s3-path-style",
        ]
    }

    /// `env` with `identity`'s keys, to run the CLI under.
    static func credentials(_ identity: SeaweedFS.Identity) -> [String] {
        ["/usr/bin/env", "AWS_ACCESS_KEY_ID=\(identity.accessKey)", "AWS_SECRET_ACCESS_KEY=\(identity.secretKey)"]
    }

    static func publisher(_ store: SeaweedFS, bucket: String) throws -> ObjectStorePublisher {
        var configuration = try ObjectStorePublisher.Configuration(
            location: "s3://\(bucket)/push", publicBaseURL: base,
            credentials: ObjectStoreCredentials(
                accessKeyID: store.publisher.accessKey, secretAccessKey: store.publisher.secretKey))
        configuration.endpoint = store.endpoint
        configuration.pathStyle = true
        return try ObjectStorePublisher(configuration)
    }

    @Test(
        """
        an FCM message's fields are each rewritten to their own platform's object: iOS's animated GIF, Android's \
        still variant; each stored with its own type, whatever the origin said
        """)
    func fcmPlatforms() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let publisher = try Self.publisher(store, bucket: bucket)
        let bed = try TestBed { configuration in
            configuration.transform.converter = VipsConverter()
            configuration.publisher = publisher
        }
        try await withEnricher(bed.configuration) { enricher in
            // The origin calls the GIF a binary/octet-stream: the store gets the sniffed type.
            let sent = bed.url("/media/anim.gif?type=binary/octet-stream")
            let result = await enricher.enrich(AndroidVariantEngineTests.message(sent))
            let (ios, android) = try AndroidVariantEngineTests.platforms(result)
            let message = try #require(result.content?.root["message"]?.objectValue)
            #expect(message["notification"]?.objectValue?["image"]?.stringValue == sent, "the shared field as sent")
            let iosKey = "push/\(ios.sha256).gif"
            let androidKey = "push/\(android.sha256).\(android.type.fileExtension)"
            #expect(
                message["apns"]?.objectValue?["fcm_options"]?.objectValue?["image"]?.stringValue
                    == "\(Self.base)/\(iosKey)")
            #expect(
                message["android"]?.objectValue?["notification"]?.objectValue?["image"]?.stringValue
                    == "\(Self.base)/\(androidKey)")
            #expect(Set(try await store.keys(in: bucket)) == [iosKey, androidKey])
            let gif = try await store.object(bucket, iosKey)
            #expect(gif.headers["content-type"] == "image/gif")
            #expect(gif.body == fixture("anim.gif"))
            let still = try await store.object(bucket, androidKey)
            #expect(still.headers["content-type"] == android.type.mime)
            #expect(AndroidVariantEngineTests.sha256(still.body) == android.sha256)
            #expect(publisher.statistics?.uploads == 2)
        }
    }

    @Test(
        """
        the CLI publishes with the environment's keys; with a wrong secret it reports SignatureDoesNotMatch, keeps \
        the attachment and the sender's URL, and shows the secret nowhere
        """)
    func cli() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try bed.adobePayloadFile("/media/photo.jpg", in: directory, named: "photo.json")
        let sha = TransformStepTests.sha256(of: "photo.jpg")
        let good = try await offPool {
            try CLI.runBlocking(
                ["enrich"] + bed.cliOptions + Self.options(store, bucket: bucket) + [input], stdin: nil,
                prefix: Self.credentials(store.publisher))
        }
        #expect(good.status == 0, "\(good.stderr)")
        let result = try #require(good.lines.first)
        #expect((result["content"] as? [String: Any])?["adb_media"] as? String == "\(Self.base)/push/\(sha).jpg")
        #expect(try await store.keys(in: bucket) == ["push/\(sha).jpg"])

        let secret = "a-wrong-secret-that-must-not-leak"
        let wrong = SeaweedFS.Identity(accessKey: store.publisher.accessKey, secretKey: secret)
        let other = try bed.adobePayloadFile("/media/logo.png", in: directory, named: "logo.json")
        let refused = try await offPool {
            try CLI.runBlocking(
                ["enrich"] + bed.cliOptions + Self.options(store, bucket: bucket) + [other], stdin: nil,
                prefix: Self.credentials(wrong)
            )
        }
        let line = try #require(refused.lines.first, "\(refused.stderr)")
        #expect((line["attachments"] as? [[String: Any]])?.count == 1, "the attachment is kept")
        #expect((line["content"] as? [String: Any])?["adb_media"] as? String == bed.url("/media/logo.png"))
        let problem = try #require((line["problems"] as? [[String: Any]])?.first)
        #expect(problem["code"] as? String == "publish-failed")
        #expect((problem["detail"] as? String)?.contains("SignatureDoesNotMatch") == true, "\(problem)")
        #expect(!refused.stdout.contains(secret) && !refused.stderr.contains(secret))
        #expect(try await store.keys(in: bucket) == ["push/\(sha).jpg"], "nothing more stored")
        let help = try await CLI.run(["enrich", "--help"])
        #expect(!help.stdout.contains(store.publisher.secretKey))
    }

    @Test(
        """
        the CLI trusts an https store's private CA with --s3-ca-bundle; without it the attachment is kept and its \
        problem says tls; the option without --publish-s3, or a bundle it cannot read, is a usage error
        """)
    func cliPrivateCA() async throws {
        let store = try await SeaweedFS(tls: true)
        try await store.createBucket("media")
        let ca = try #require(store.caCertificate)
        let bed = try TestBed()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let input = try bed.adobePayloadFile("/media/photo.jpg", in: directory, named: "photo.json")
        let sha = TransformStepTests.sha256(of: "photo.jpg")
        func enrich(_ extra: [String]) async throws -> CLI.Run {
            try await offPool {
                try CLI.runBlocking(
                    ["enrich"] + bed.cliOptions + Self.options(store, bucket: "media") + extra + [input], stdin: nil,
                    prefix: Self.credentials(store.publisher))
            }
        }

        let untrusted = try await enrich([])
        let line = try #require(untrusted.lines.first, "\(untrusted.stderr)")
        #expect((line["attachments"] as? [[String: Any]])?.count == 1, "the attachment is kept")
        #expect((line["content"] as? [String: Any])?["adb_media"] as? String == bed.url("/media/photo.jpg"))
        let problem = try #require((line["problems"] as? [[String: Any]])?.first)
        #expect(problem["code"] as? String == "publish-failed")
        // The detail of the publish failure code tls, and no other.
        #expect((problem["detail"] as? String)?.contains("the store's TLS failed at") == true, "\(problem)")
        #expect(try await store.keys(in: "media") == [], "nothing stored")

        let trusted = try await enrich(["--s3-ca-bundle", ca])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        let published = try #require(trusted.lines.first, "\(trusted.stderr)")
        #expect((published["content"] as? [String: Any])?["adb_media"] as? String == "\(Self.base)/push/\(sha).jpg")
        #expect(try await store.keys(in: "media") == ["push/\(sha).jpg"])

        let missing = directory + "/missing.pem"
        let unreadable = try await enrich(["--s3-ca-bundle", missing])
        #expect(unreadable.status == 64, "\(unreadable.stderr)")
        #expect(unreadable.stderr.contains("--s3-ca-bundle: cannot read '\(missing)'"), "\(unreadable.stderr)")
        let alone = try await CLI.run(["enrich"] + bed.cliOptions + ["--s3-ca-bundle", ca, input])
        #expect(alone.status == 64, "\(alone.stderr)")
        #expect(alone.stderr.contains("--s3-ca-bundle: needs --publish-s3"), "\(alone.stderr)")
    }

    @Test(
        "two processes publishing one campaign at once store each image once, and every payload is published",
        arguments: ["head", "if-none-match"])
    func twoWorkers(existenceCheck: String) async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let bed = try TestBed()
        let images = ["photo.jpg", "logo.png", "anim.gif", "photo-exif.jpg"]
        let lines = (0..<40).map {
            #"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/" + images[$0 % 4]))"}"#
        }.joined(separator: "\n")
        let runs = try await withThrowingTaskGroup(of: CLI.Run.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    try await offPool {
                        try CLI.runBlocking(
                            ["stream", "--concurrency", "16", "--s3-existence-check", existenceCheck]
                                + bed.cliOptions + Self.options(store, bucket: bucket),
                            stdin: lines,
                            prefix: Self.credentials(store.publisher))
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for run in runs {
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.lines.count == 40)
            for line in run.lines {
                let attachment = (line["attachments"] as? [[String: Any]])?.first
                #expect(attachment?["published_url"] is String, "\(line)")
            }
        }
        let keys = try await store.keys(in: bucket)
        #expect(keys.count == 4 && Set(keys).count == 4, "\(keys)")
    }

    @Test("serve publishes and counts: uploads, hits and a store's refusal by its code in /metrics")
    func serveMetrics() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let bed = try TestBed()
        let server = try await ServeProcess(
            bed.cliOptions + Self.options(store, bucket: bucket),
            environment: Array(Self.credentials(store.publisher).dropFirst()))
        let payload = Array(#"{"aps":{"mutable-content":1},"adb_media":"\#(bed.url("/media/photo.jpg"))"}"#.utf8)
        for _ in 0..<3 {
            let reply = try await server.request("POST", "/v1/enrich", body: payload)
            #expect(reply.status == 200 && !reply.text.contains("publish-failed"), "\(reply.text)")
        }
        let metrics = try await server.request("GET", "/metrics").text
        #expect(metrics.contains(#"richpush_publish_total{result="uploaded"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"richpush_publish_total{result="hit"} 2"#))
        #expect(metrics.contains("richpush_publish_upload_duration_seconds_count 1"))
    }

    @Test(
        """
        serve --tenants: a tenant without publishing options publishes under the server's store in a prefix of its \
        name; the same image is one object per tenant
        """
    )
    func tenantPrefixes() async throws {
        let store = try await SeaweedFS.shared()
        let bucket = try await store.newBucket()
        let bed = try TestBed()
        let tenants = [ServeTenantsTests.TestTenant("alpha"), ServeTenantsTests.TestTenant("beta")]
        let server = try await ServeProcess(
            bed.cliOptions + Self.options(store, bucket: bucket) + ["--tenants", try ServeTenantsTests.file(tenants)],
            environment: Array(Self.credentials(store.publisher).dropFirst()))
        var digest = ""
        for tenant in tenants {
            let reply = try await ServeTenantsTests.enrich(server, bed.url("/media/photo.jpg"), as: tenant)
            #expect(reply.status == 200, "\(reply.text)")
            digest = try #require((reply.json["attachments"] as? [[String: Any]])?.first?["sha256"] as? String)
            let content = reply.json["content"] as? [String: Any]
            #expect(
                content?["adb_media"] as? String == "\(Self.base)/push/\(tenant.name)/\(digest).jpg", "\(reply.text)")
        }
        let keys = try await store.keys(in: bucket)
        #expect(Set(keys) == ["push/alpha/\(digest).jpg", "push/beta/\(digest).jpg"], "\(keys)")
        #expect(try await server.terminate() == 0)
    }

    @Test(
        """
        serve --tenants over an https store: a tenant's options saying how it publishes (s3_ca_bundle, s3_uploads, \
        s3_cache_control) apply in its own prefix; one trusting another CA fails tls while the others publish
        """)
    func tenantPublishingHows() async throws {
        let store = try await SeaweedFS(tls: true)
        try await store.createBucket("media")
        let ca = try #require(store.caCertificate)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let copy = directory + "/store-ca.pem"
        try FileManager.default.copyItem(atPath: ca, toPath: copy)
        let other = try await offPool { try makeCertificate(in: directory).certificate }
        let bed = try TestBed()
        let tenants = [
            ServeTenantsTests.TestTenant("alpha"), ServeTenantsTests.TestTenant("beta", ["s3_ca_bundle": other]),
            ServeTenantsTests.TestTenant("gamma", ["s3_ca_bundle": copy]),
            ServeTenantsTests.TestTenant("delta", ["s3_uploads": 2]),
            ServeTenantsTests.TestTenant("epsilon", ["s3_cache_control": "no-cache"]),
        ]
        let server = try await ServeProcess(
            bed.cliOptions + Self.options(store, bucket: "media")
                + ["--s3-ca-bundle", ca, "--tenants", try ServeTenantsTests.file(tenants)],
            environment: Array(Self.credentials(store.publisher).dropFirst()))
        let digest = TransformStepTests.sha256(of: "photo.jpg")
        for tenant in tenants {
            let reply = try await ServeTenantsTests.enrich(server, bed.url("/media/photo.jpg"), as: tenant)
            #expect(reply.status == 200, "\(reply.text)")
            let field = (reply.json["content"] as? [String: Any])?["adb_media"] as? String
            if tenant.name == "beta" {
                #expect(field == bed.url("/media/photo.jpg"), "\(reply.text)")
                #expect(ServeTenantsTests.codes(reply) == ["publish-failed"], "\(reply.text)")
                #expect(reply.text.contains("the store's TLS failed at"), "\(reply.text)")
            } else {
                #expect(field == "\(Self.base)/push/\(tenant.name)/\(digest).jpg", "\(reply.text)")
            }
        }
        let keys = try await store.keys(in: "media")
        #expect(
            Set(keys) == Set(["alpha", "gamma", "delta", "epsilon"].map { "push/\($0)/\(digest).jpg" }), "\(keys)")
        // Each tenant's how applied in its prefix: epsilon's Cache-Control, the server's for the others.
        let stored = try await store.object("media", "push/epsilon/\(digest).jpg", method: "HEAD")
        #expect(stored.headers["cache-control"] == "no-cache", "\(stored.headers)")
        let alpha = try await store.object("media", "push/alpha/\(digest).jpg", method: "HEAD")
        #expect(alpha.headers["cache-control"] == "public, max-age=31536000, immutable", "\(alpha.headers)")
        #expect(try await server.terminate() == 0)
    }
}
