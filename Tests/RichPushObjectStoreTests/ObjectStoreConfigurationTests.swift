import CCurl
import RichPushCore
import RichPushFetch
import RichPushMedia
import RichPushTestSupport
import Testing

@testable import RichPushObjectStore

@Suite("ObjectStorePublisher.Configuration: locations, addressing, validation")
struct ObjectStoreConfigurationTests {
    let keys = ObjectStoreCredentials(accessKeyID: "AKID", secretAccessKey: "s3cr3t/+key")

    @Test(
        "s3:// locations split into bucket and prefix",
        arguments: [
            ("s3://media", "media", ""), ("s3://media/", "media", ""), ("s3://media/push", "media", "push"),
            ("s3://media//push/2026/", "media", "push/2026"),
        ])
    func location(text: String, bucket: String, prefix: String) throws {
        let configuration = try ObjectStorePublisher.Configuration(
            location: text, publicBaseURL: "https://cdn.example/", credentials: keys)
        #expect(configuration.bucket == bucket)
        #expect(configuration.prefix == prefix)
        #expect(configuration.publicBaseURL == "https://cdn.example")
        try configuration.validate()
    }

    @Test("A location that is not s3://BUCKET is refused", arguments: ["media", "s3://", "s3:///x", "https://b/x"])
    func badLocation(text: String) {
        #expect(throws: ConfigurationError.self) {
            try ObjectStorePublisher.Configuration(location: text, publicBaseURL: "https://cdn", credentials: keys)
        }
    }

    @Test("Keys and request URLs: virtual-hosted by default, path style on request, AWS's endpoint by default")
    func addressing() throws {
        var configuration = try ObjectStorePublisher.Configuration(
            location: "s3://media/push", publicBaseURL: "https://cdn.example", credentials: keys)
        #expect(configuration.key(named: "ab.jpg") == "push/ab.jpg")
        #expect(
            configuration.requestURL(forKey: "push/ab.jpg") == "https://media.s3.us-east-1.amazonaws.com/push/ab.jpg")
        configuration.region = "eu-west-3"
        #expect(configuration.requestURL(forKey: "k") == "https://media.s3.eu-west-3.amazonaws.com/k")
        configuration.endpoint = "http://127.0.0.1:8333/"
        configuration.pathStyle = true
        #expect(configuration.requestURL(forKey: "push/ab.jpg") == "http://127.0.0.1:8333/media/push/ab.jpg")
        configuration.prefix = ""
        #expect(configuration.key(named: "ab.jpg") == "ab.jpg")
        // Dots within a part are a name's.
        configuration.prefix = "a.b/..c/d.."
        #expect(throws: Never.self) { try configuration.validate() }
        // An address is an endpoint with path style only (`<bucket>.<address>` is a name no resolver has); a
        // host name is one either way.
        configuration.pathStyle = false
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.endpoint = "http://store.internal:8333"
        #expect(throws: Never.self) { try configuration.validate() }
    }

    @Test(
        "Each wrong field is named",
        arguments: [
            ("bucket", "Media_Bucket"), ("bucket", "ab"), ("prefix", "a b"), ("prefix", "a//b"), ("prefix", "ü"),
            ("prefix", "../other-bucket"), ("prefix", "a/./b"), ("prefix", "a/.."), ("prefix", "."),
            ("publicBaseURL", "cdn.example"), ("publicBaseURL", "https://"), ("endpoint", "http://h/path"),
            ("endpoint", "http://user:pw@h"), ("endpoint", "ftp://h"), ("endpoint", "http://127.0.0.1:8333"),
            ("endpoint", "https://[::1]:8333"), ("endpoint", "http://10.0.0.7"), ("region", "EU West"),
            ("cacheControl", "public\r\nX-Evil: 1"), ("concurrentUploads", "0"), ("retries", "11"),
        ])
    func invalid(field: String, value: String) throws {
        var configuration = try ObjectStorePublisher.Configuration(
            location: "s3://media/push", publicBaseURL: "https://cdn.example", credentials: keys)
        switch field {
        case "bucket": configuration.bucket = value
        case "prefix": configuration.prefix = value
        case "publicBaseURL": configuration.publicBaseURL = value
        case "endpoint": configuration.endpoint = value
        case "region": configuration.region = value
        case "cacheControl": configuration.cacheControl = value
        case "concurrentUploads": configuration.concurrentUploads = Int(value)!
        default: configuration.retries = Int(value)!
        }
        let error = #expect(throws: ConfigurationError.self) { try configuration.validate() }
        #expect(error?.field == field)
    }

    @Test("Path style accepts the bucket names some stores allow and AWS does not")
    func pathStyleBucket() throws {
        var configuration = try ObjectStorePublisher.Configuration(
            location: "s3://Media_Bucket", publicBaseURL: "https://cdn.example", credentials: keys)
        configuration.pathStyle = true
        try configuration.validate()
    }

    @Test("A digest in hex becomes x-amz-checksum-sha256's base64")
    func base64() {
        #expect(
            ObjectStorePublisher.base64(hex: ObjectStorePublisher.emptySHA256)
                == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
        #expect(ObjectStorePublisher.base64(hex: "ff") == "/w==")
        #expect(ObjectStorePublisher.base64(hex: "ffee") == "/+4=")
        #expect(ObjectStorePublisher.base64(hex: "ffeedd") == "/+7d")
    }

    @Test("An error document's Code and Message are read, unescaped; a status alone gives S3's code")
    func errorDocument() {
        let body = Array(
            """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>AccessDenied</Code><Message>Access &amp; &quot;denied&quot;</Message></Error>
            """.utf8)
        let error = StoreError(
            response: StoreResponse(status: 403, contentLength: -1, body: body), method: "PUT", url: "http://s/b/k",
            secrets: [])
        #expect(error.code == "AccessDenied")
        #expect(error.detail == "the store answered AccessDenied (HTTP 403 to PUT http://s/b/k): Access & \"denied\"")
        #expect(!error.retryable)
        let slow = StoreError(
            response: StoreResponse(status: 503, contentLength: -1, body: Array("<Code>SlowDown</Code>".utf8)),
            method: "PUT", url: "u", secrets: [])
        #expect(slow.code == "SlowDown" && slow.retryable)
        let bare = StoreError(
            response: StoreResponse(status: 404, contentLength: -1, body: []), method: "HEAD", url: "u", secrets: [])
        #expect(bare.code == "NoSuchKey" && !bare.retryable)
        #expect(StoreError.element("Code", in: "<Code></Code>") == nil)
        for (status, code) in [(301, "PermanentRedirect"), (308, "PermanentRedirect"), (307, "TemporaryRedirect")] {
            #expect(StoreError.code(forStatus: status) == code)
        }
    }

    @Test(
        """
        A store's code holding the secret key or the session token is not taken (it would be a metric's label and a \
        log field): the status's code is, and the detail quotes it for the publisher to hide
        """)
    func codeHoldingSecret() {
        let token = "ToKeNpRoBe3SESSIONabc987"
        for given in [token, "X" + token, "wJalrXUtnFEMI"] {
            let error = StoreError(
                response: StoreResponse(status: 403, contentLength: -1, body: Array("<Code>\(given)</Code>".utf8)),
                method: "PUT", url: "u", secrets: ["wJalrXUtnFEMI", token])
            #expect(error.code == "AccessDenied", "\(given)")
        }
        let short = StoreError(
            response: StoreResponse(status: 403, contentLength: -1, body: Array("<Code>AccessDenied</Code>".utf8)),
            method: "PUT", url: "u", secrets: ["", "Acc"])
        #expect(short.code == "AccessDenied", "secrets under 4 characters are not looked for")
    }

    @Test(
        """
        libcurl's timeout is expired only at the deadline; the connect timeout (10 s at most) before it is a \
        network failure, tried again
        """)
    func timeoutBeforeDeadline() {
        let stop = StopFlag()
        let early = StoreError(
            curl: CURLE_OPERATION_TIMEDOUT, message: "Failed to connect after 10001 ms", url: "u", stop: stop,
            deadline: .now + .seconds(5))
        #expect(early.code == "network" && early.retryable)
        #expect(early.detail.contains("in time"))
        let due = StoreError(
            curl: CURLE_OPERATION_TIMEDOUT, message: "Operation timed out", url: "u", stop: stop,
            deadline: .now + .milliseconds(2))
        #expect(due.code == "expired" && !due.retryable)
    }

    @Test("A 2xx whose body is an S3 error document is not a success")
    func errorDocumentInSuccess() {
        for body in [
            #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n<Error><Code>InternalError</Code></Error>",
            "<Error><Code>InternalError</Code></Error>", "  \r\n<Error xmlns=\"x\"><Code>X</Code></Error>",
        ] {
            #expect(StoreError.isErrorDocument(Array(body.utf8)), "\(body)")
        }
        for body in ["", "<PutObjectResult/>", #"<?xml version="1.0"?><CopyObjectResult/>"#, "Error"] {
            #expect(!StoreError.isErrorDocument(Array(body.utf8)), "\(body)")
        }
    }

    @Test(
        """
        a store's Code that is not one (a line break, an escape, 65 characters) is not taken as the code; its words \
        lose their control characters; the failures counted by code stay 32 codes and other
        """)
    func oddErrorDocument() {
        let answer = { (status: Int, body: String) in
            StoreError(
                response: StoreResponse(status: status, contentLength: -1, body: Array(body.utf8)), method: "PUT",
                url: "u", secrets: [])
        }
        let crlf = answer(403, "<Code>Access\r\nDenied</Code><Message>line\r\nFAKE \u{1B}[2J\u{7}</Message>")
        #expect(crlf.code == "AccessDenied")
        #expect(
            crlf.detail
                == "the store answered AccessDenied (its code, not one: Access\u{FFFD}\u{FFFD}Denied) (HTTP 403 to PUT "
                + "u): line\u{FFFD}\u{FFFD}FAKE \u{FFFD}[2J\u{FFFD}")
        #expect(answer(500, "<Code>\(String(repeating: "A", count: 65))</Code>").code == "HTTP500")
        #expect(answer(500, "<Code>\(String(repeating: "A", count: 64))</Code>").code.count == 64)
        #expect(answer(400, "<Code>Slow Down</Code>").code == "BadRequest")
        // A store that echoes the request it refused: the secret, the token and the signature are hidden.
        let credentials = ObjectStoreCredentials(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG", sessionToken: "TOKEN-abc123")
        let signature = String(repeating: "0123456789abcdef", count: 4)
        let echoed = answer(
            403,
            "<Code>SignatureDoesNotMatch</Code><Message>Credential=AKIDEXAMPLE/x, Signature=\(signature) "
                + "x-amz-security-token:TOKEN-abc123 secret wJalrXUtnFEMI/K7MDENG</Message>")
        let hidden = ObjectStorePublisher.hidingSecrets(echoed.detail, of: credentials)
        #expect(
            hidden.hasSuffix(
                "Credential=AKIDEXAMPLE/x, Signature=<hidden> x-amz-security-token:<hidden> secret <hidden>"),
            "\(hidden)")
        var statistics = PublishStatistics()
        for index in 0..<40 { statistics.countFailure("Code\(index)") }
        statistics.countFailure("Code0")
        statistics.countFailure(nil)
        #expect(statistics.failures.count == 33)
        #expect(statistics.failures["Code0"] == 2)
        #expect(statistics.failures["other"] == 9, "8 codes past the 32nd, and one without a code")
    }

    @Test(
        """
        a PUT carries the sniffed type, Cache-Control and the body's hash twice; a HEAD the empty body's hash; both \
        the session token when there is one
        """)
    func requestHeaders() throws {
        var configuration = try ObjectStorePublisher.Configuration(
            location: "s3://media/push", publicBaseURL: "https://cdn.example",
            credentials: ObjectStoreCredentials(accessKeyID: "AKID", secretAccessKey: "secret", sessionToken: "TOKEN"))
        configuration.cacheControl = "public, max-age=60"
        let publisher = try ObjectStorePublisher(configuration)
        let sha = ObjectStorePublisher.emptySHA256
        let media = FetchedMedia(path: "/x", directory: "", type: .gif, bytes: 0, sha256: sha)
        #expect(
            publisher.headers(.put, for: media) == [
                "x-amz-content-sha256: \(sha)", "Content-Type: image/gif", "Cache-Control: public, max-age=60",
                "x-amz-checksum-sha256: 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "x-amz-security-token: TOKEN",
            ])
        #expect(
            publisher.headers(.head, for: media) == [
                "x-amz-content-sha256: \(sha)", "x-amz-security-token: TOKEN",
            ])
    }
}
