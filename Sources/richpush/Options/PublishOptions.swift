import RichPush
import RichPushObjectStore

#if canImport(Glibc)
    import Glibc
#endif

/// Publishing (`enrich`, `stream`, `serve`, `worker`, `preflight`): to a directory a web server serves
/// (`--publish-dir`), or to an S3-compatible object store (`--publish-s3`), each under `--publish-url`.
struct PublishOptions: ParsableArguments {
    @Option(
        "publish-dir", .text("dir"),
        help: "Also write each attachment, content-addressed, as dir/<sha256>.<ext> (mode 0644), and rewrite its "
            + "field in the content to the --publish-url one.")
    var publishDirectory: String?

    @Option(
        "publish-s3", .text("s3://bucket/prefix"),
        help: "Also upload each attachment, content-addressed, to the key prefix/<sha256>.<ext> of an S3-compatible "
            + "store (typed by its bytes, immutable), and rewrite its field to the --publish-url one. Credentials: "
            + "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), else the shared credentials file "
            + "(--s3-credentials-file, AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials) at AWS_PROFILE or default.")
    var publishS3: String?

    @Option(
        "publish-url", .text("url"),
        help: "The URL --publish-dir is served under, or the one --publish-s3's keys are (a CDN's, http or https).")
    var publishURL: String?

    @Option(
        "s3-endpoint", .text("url"), help: "The store's endpoint (MinIO, R2, B2, Ceph, SeaweedFS...).",
        default: "https://s3.<region>.amazonaws.com")
    var s3Endpoint: String?

    @Option(
        "s3-ca-bundle", .text("file"),
        help: "Check an https store's certificate against the CA certificates in this PEM file instead of the "
            + "system's (a store with a private CA).",
        default: "the system's")
    var s3CABundle: String?

    @Option("s3-region", .text("region"), help: "The region requests are signed for.")
    var s3Region: String = "us-east-1"

    @Flag(
        "s3-path-style",
        help: "Address the bucket in the path (endpoint/bucket/key), as MinIO, SeaweedFS and stores on an IP need, "
            + "not in the host name.")
    var s3PathStyle: Bool

    @Option(
        "s3-credentials-file", .text("file"), help: "A shared credentials file to read the keys from.",
        default: "$AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials")
    var s3CredentialsFile: String?

    @Option("s3-cache-control", .text("value"), help: "The Cache-Control each object is stored with.")
    var s3CacheControl: String = "public, max-age=31536000, immutable"

    @Option("s3-uploads", .whole("uploads", in: 1...256), help: "Uploads at once, each on a thread of its own.")
    var s3Uploads: Int = 64

    @Option(
        "s3-existence-check", .word("how"),
        help: "How a key stored already is found: head asks with a HEAD before each upload; if-none-match makes the "
            + "upload conditional (If-None-Match: *; 412: stored already), one request less for each new image, for "
            + "stores that honour it (AWS S3, R2, MinIO, Ceph, SeaweedFS); auto asks with HEADs until 16 in a row "
            + "found nothing, then uploads conditionally until a key is found.")
    var s3ExistenceCheck: ObjectStorePublisher.Configuration.ExistenceCheck = .auto

    /// The publisher these options describe; nil when nothing publishes.
    func publisher() throws(UsageError) -> (any MediaPublisher)? {
        let s3Options: [any NamedOption] = [
            $s3Endpoint, $s3CABundle, $s3Region, $s3PathStyle, $s3CredentialsFile, $s3CacheControl, $s3Uploads,
            $s3ExistenceCheck,
        ]
        if publishS3 == nil, let given = s3Options.first(where: \.isGiven) {
            throw UsageError("\(given.flag): needs \($publishS3.flag)")
        }
        switch (publishDirectory, publishS3, publishURL) {
        case (nil, nil, nil):
            return nil
        case (_?, _?, _):
            throw UsageError("\($publishDirectory.flag) and \($publishS3.flag): give one, not both")
        case (nil, nil, _?):
            throw UsageError("\($publishURL.flag): needs \($publishDirectory.flag) or \($publishS3.flag)")
        case (_?, nil, nil):
            throw UsageError("\($publishDirectory.flag): needs \($publishURL.flag)")
        case (nil, _?, nil):
            throw UsageError("\($publishS3.flag): needs \($publishURL.flag)")
        case (let directory?, nil, let url?):
            guard !directory.isEmpty else { throw UsageError("\($publishDirectory.flag): the path is empty") }
            guard url.hasPrefix("https://") || url.hasPrefix("http://"), url.count > 8 else {
                throw UsageError("\($publishURL.flag): '\(url)' is not an http or https URL")
            }
            let absolute = directory.hasPrefix("/") ? directory : FileSystem.currentDirectory() + "/" + directory
            let publisher = DirectoryPublisher(directory: absolute, baseURL: url)
            do {
                try publisher.check()
            } catch {
                throw UsageError("\($publishDirectory.flag): \(error.detail)")
            }
            return publisher
        case (nil, let location?, let url?):
            return try objectStorePublisher(location: location, url: url)
        }
    }

    private func objectStorePublisher(location: String, url: String) throws(UsageError) -> ObjectStorePublisher {
        do {
            let credentials = try ObjectStoreCredentials.standard(
                environment: Self.environment(), credentialsFile: s3CredentialsFile)
            var configuration = try ObjectStorePublisher.Configuration(
                location: location, publicBaseURL: url, credentials: credentials)
            configuration.endpoint = s3Endpoint
            configuration.caBundle = s3CABundle
            configuration.region = s3Region
            configuration.pathStyle = s3PathStyle
            configuration.cacheControl = s3CacheControl
            configuration.concurrentUploads = s3Uploads
            configuration.existenceCheck = s3ExistenceCheck
            return try ObjectStorePublisher(configuration)
        } catch {
            let flag =
                switch error.field {
                case "location", "bucket", "prefix": $publishS3.flag
                case "publicBaseURL": $publishURL.flag
                case "endpoint": $s3Endpoint.flag
                case "caBundle": $s3CABundle.flag
                case "region": $s3Region.flag
                case "cacheControl": $s3CacheControl.flag
                case "credentials":
                    s3CredentialsFile == nil ? "\($publishS3.flag) credentials" : $s3CredentialsFile.flag
                default: $publishS3.flag
                }
            throw UsageError("\(flag): \(error.detail)")
        }
    }

    /// The process's environment, as the credentials' lookup reads it.
    static func environment() -> [String: String] {
        var variables: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                variables[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry += 1
        }
        return variables
    }
}
