import RichPushCore

extension ObjectStorePublisher {
    /// Where and how attachments are published to an S3-compatible store. Every field has a documented default but
    /// the bucket, the public URL and the credentials, which only the operator knows.
    public struct Configuration: Sendable {
        /// The bucket (S3's rules: 3 to 63 lowercase letters, digits, dots and hyphens; underscores too with
        /// `pathStyle`, for stores that allow them).
        public var bucket: String
        /// The key prefix, without leading or trailing slash; empty for none. Keys are `<prefix>/<sha256>.<ext>`.
        /// Letters, digits and `-_.!*'()/` only (S3's safe characters): a key is then the same in the request's
        /// signature, its URL and the published URL, with no encoding to disagree on.
        public var prefix: String
        /// The URL the bucket's keys are served under (a CDN's, or the store's public one), without a trailing
        /// slash: an attachment is published as `<publicBaseURL>/<key>`.
        public var publicBaseURL: String
        /// The store's endpoint, `http` or `https`, no path; nil (the default) is AWS's regional endpoint,
        /// `https://s3.<region>.amazonaws.com`.
        public var endpoint: String?
        /// The PEM file of the CA certificates the store's certificate is checked against over https, in place of
        /// the system's (a store with a private CA: MinIO, SeaweedFS or Ceph on an internal network); nil (the
        /// default) trusts the system's bundle. Read once by each upload thread's handle and kept an hour, as the
        /// fetch loop keeps `--ca-bundle`; a file changed meanwhile is read by a new publisher. Only with an https
        /// `endpoint`.
        public var caBundle: String?
        /// The region requests are signed for. Default `us-east-1`: AWS's first region, and what most other
        /// stores (MinIO, SeaweedFS, Ceph) accept whatever they are.
        public var region = "us-east-1"
        /// Address the bucket in the path (`<endpoint>/<bucket>/<key>`) rather than in the host name
        /// (`<bucket>.<endpoint host>/<key>`). Default false: AWS's virtual-hosted style, which AWS requires for new
        /// buckets; MinIO, SeaweedFS and a store on an IP address need true.
        public var pathStyle = false
        /// The keys requests are signed with (`ObjectStoreCredentials.standard` finds them where the AWS tools do).
        public var credentials: ObjectStoreCredentials
        /// The `Cache-Control` each object is stored with. Default `public, max-age=31536000, immutable`: a key
        /// names its bytes (their SHA-256), so a cached copy is never wrong.
        public var cacheControl = "public, max-age=31536000, immutable"
        /// Uploads at once, each on a thread of the publisher's own (an upload blocks its thread; the fetch loop and
        /// the cooperative pool are never held); 1 to 256. Default 64, as many as `curl --parallel` keeps: a store
        /// sharing the machine's two cores took 2,000 new images at 1.25x curl's wall time with 64, 1.50x with 16
        /// (bench (p)), for 7 MiB more peak memory; at a distant store's 50 ms each, 1,280 uploads a second.
        public var concurrentUploads = 64
        /// An upload retried up to this many times after a 5xx, a 429 or `SlowDown`, a refused, reset or dropped
        /// connection, while the deadline leaves room. Default 2, as fetches' retries.
        public var retries = 2
        /// How long a key this publisher stored (or found) is remembered as there: asked for again meanwhile, it is
        /// published at once, with no request to the store (a campaign's 10,000 payloads cost one `HEAD` and one
        /// `PUT` per image, not 10,000 `HEAD`s). Default 10 minutes: a campaign's span; an object deleted from the
        /// store is uploaded again at most this long after. Zero asks the store every time.
        public var publishedMemory: Duration = .seconds(600)
        /// The deadline of a `publish(_:)` called without one (a host calling the publisher itself). Default 60 s.
        public var timeout: Duration = .seconds(60)
        /// How the publisher learns that a key is stored already. Default `auto`.
        public var existenceCheck = ExistenceCheck.auto

        /// How the publisher learns that a key is stored already (and uploads nothing).
        public enum ExistenceCheck: String, Sendable, CaseIterable {
            /// A `HEAD` of the key before each upload: present with the same length, it is a hit. What every store
            /// answers, at one request more for each new object (the store's work for it too: on SeaweedFS, 2,000
            /// `HEAD`s cost it about 1 s of CPU).
            case head
            /// The `PUT` alone, conditional (`If-None-Match: *`): a store that has the key answers 412, a hit. One
            /// request for each new object. AWS S3 (since August 2024), Cloudflare R2, MinIO, Ceph and SeaweedFS
            /// honour it; a store that ignores it stores the same bytes again under the same name (the key names
            /// its bytes: nothing a reader sees changes) and counts an upload where `head` would count a hit. The
            /// body may be sent before the 412 (SeaweedFS asks for it with `100 Continue`).
            case ifNoneMatch = "if-none-match"
            /// `head` while the store has keys the publisher meets, the conditional `PUT` once it has not had any for
            /// a while: after 16 `HEAD`s in a row that found nothing, uploads are conditional, every 256th still
            /// asked with a `HEAD`; a 412 or a `HEAD` that finds its key goes back to `head`. New images (what a
            /// `HEAD` finds absent anyway) cost one request; a campaign another worker published is found by
            /// `HEAD`, as with `head`, even on a store that ignores `If-None-Match`.
            case auto
        }

        /// A configuration for `location` (`s3://BUCKET/PREFIX`, prefix optional), published under
        /// `publicBaseURL`, signed with `credentials`.
        /// - Throws: `ConfigurationError` for `location` when it is not an `s3://` URL with a bucket.
        public init(
            location: String, publicBaseURL: String, credentials: ObjectStoreCredentials
        ) throws(ConfigurationError) {
            guard location.hasPrefix("s3://") else {
                throw ConfigurationError(
                    field: "location", code: .malformed, detail: "'\(location)' is not an s3://BUCKET/PREFIX URL")
            }
            let rest = location.dropFirst(5)
            let bucket = rest.prefix { $0 != "/" }
            guard !bucket.isEmpty else {
                throw ConfigurationError(field: "location", code: .malformed, detail: "'\(location)' names no bucket")
            }
            var prefix = Substring(rest.dropFirst(bucket.count))
            while prefix.hasPrefix("/") { prefix = prefix.dropFirst() }
            while prefix.hasSuffix("/") { prefix = prefix.dropLast() }
            self.init(
                bucket: String(bucket), prefix: String(prefix), publicBaseURL: publicBaseURL, credentials: credentials)
        }

        /// A configuration with each part given.
        public init(bucket: String, prefix: String = "", publicBaseURL: String, credentials: ObjectStoreCredentials) {
            self.bucket = bucket
            self.prefix = prefix
            self.publicBaseURL = publicBaseURL.hasSuffix("/") ? String(publicBaseURL.dropLast()) : publicBaseURL
            self.credentials = credentials
        }

        /// The endpoint requests go to: `endpoint`, or AWS's for `region`.
        public var resolvedEndpoint: String {
            let endpoint = endpoint ?? "https://s3.\(region).amazonaws.com"
            return endpoint.hasSuffix("/") ? String(endpoint.dropLast()) : endpoint
        }

        /// The key an object of `name` (`<sha256>.<ext>`) is stored under.
        public func key(named name: String) -> String { prefix.isEmpty ? name : prefix + "/" + name }

        /// The URL a request for `key` goes to, in the configured addressing style.
        public func requestURL(forKey key: String) -> String {
            let endpoint = resolvedEndpoint
            if pathStyle { return endpoint + "/" + bucket + "/" + key }
            let schemeEnd = endpoint.firstRange(of: "://")!.upperBound
            return endpoint[..<schemeEnd] + bucket + "." + endpoint[schemeEnd...] + "/" + key
        }

        /// Checks every field.
        /// - Throws: `ConfigurationError` naming the first field that is wrong and what it accepts.
        public func validate() throws(ConfigurationError) {
            func fail(_ field: String, _ detail: String, _ code: EnrichmentProblem.Code = .malformed)
                -> ConfigurationError
            { ConfigurationError(field: field, code: code, detail: detail) }
            let lowercase = bucket.utf8.allSatisfy {
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x2D
                    || (pathStyle && ($0 == 0x5F || (0x41...0x5A).contains($0)))
            }
            guard (3...63).contains(bucket.utf8.count), lowercase, bucket.first != ".", bucket.first != "-" else {
                throw fail(
                    "bucket",
                    "'\(bucket)' is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens"
                        + (pathStyle ? ", or underscores and capitals with path style)" : ")"))
            }
            let safe = prefix.utf8.allSatisfy {
                (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) || (0x30...0x39).contains($0)
                    || Array("-_.!*'()/".utf8).contains($0)
            }
            // A `.` or `..` part would be resolved away by curl in the request's path (`../other-bucket` wrote to
            // another bucket) but kept in the published URL: refused, as an empty part is.
            let dotted = prefix.split(separator: "/", omittingEmptySubsequences: false).contains {
                $0 == "." || $0 == ".."
            }
            guard safe, !prefix.contains("//"), !dotted, prefix.utf8.count <= 512 else {
                throw fail(
                    "prefix",
                    "'\(prefix)' is not a key prefix (letters, digits and -_.!*'()/ only, no empty, . or .. part)")
            }
            guard Self.isHTTPURL(publicBaseURL, pathAllowed: true) else {
                throw fail("publicBaseURL", "'\(publicBaseURL)' is not an http or https URL")
            }
            if let endpoint {
                guard Self.isHTTPURL(endpoint, pathAllowed: false) else {
                    throw fail("endpoint", "'\(endpoint)' is not an http or https URL of a host (no path, no user)")
                }
                // Virtual-hosted style names `<bucket>.<host>`: of an address, a name the resolver is asked for
                // (outside the machine, most likely) and never finds.
                guard pathStyle || !Self.isAddress(endpoint) else {
                    throw fail(
                        "endpoint",
                        "'\(endpoint)' is an IP address: a bucket is named under it only with path style "
                            + "(pathStyle, --s3-path-style)")
                }
            }
            if let caBundle {
                if let problem = FileSystem.certificateBundleProblem(caBundle) {
                    throw fail("caBundle", problem.detail, problem.code)
                }
                // Trust given for a store that is not asked over https would be set and never used: a mistake.
                guard resolvedEndpoint.hasPrefix("https://") else {
                    throw fail(
                        "caBundle", "the endpoint '\(resolvedEndpoint)' is not https: it has no certificate to check")
                }
            }
            guard !region.isEmpty, region.utf8.count <= 64,
                region.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D })
            else { throw fail("region", "'\(region)' is not a region name (lowercase letters, digits, hyphens)") }
            guard !cacheControl.isEmpty, cacheControl.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
                throw fail("cacheControl", "a Cache-Control value is printable ASCII on one line")
            }
            guard (1...256).contains(concurrentUploads) else {
                throw fail("concurrentUploads", "\(concurrentUploads) is not in 1...256", .outOfRange)
            }
            guard (0...10).contains(retries) else { throw fail("retries", "\(retries) is not in 0...10", .outOfRange) }
            guard publishedMemory >= .zero else {
                throw fail("publishedMemory", "must not be negative", .outOfRange)
            }
            guard timeout > .zero else { throw fail("timeout", "must be more than zero", .outOfRange) }
            let key = credentials.accessKeyID
            guard !key.isEmpty, !key.contains(":"), key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
                !credentials.secretAccessKey.isEmpty,
                credentials.secretAccessKey.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
                credentials.sessionToken?.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) ?? true
            else {
                // The message names the access key id at most: never the secret.
                throw fail("credentials", "the access key id and secret must be printable ASCII without spaces")
            }
        }

        /// Whether the host of `url` (an `isHTTPURL` one) is an IP address, v4 or bracketed v6.
        static func isAddress(_ url: String) -> Bool {
            guard let schemeEnd = url.firstRange(of: "://") else { return false }
            let authority = url[schemeEnd.upperBound...].prefix { $0 != "/" }
            if authority.hasPrefix("[") { return true }
            return IPAddress(String(authority.prefix { $0 != ":" })) != nil
        }

        /// `http://` or `https://` with a host, no user part, no space; a path only when `pathAllowed`.
        static func isHTTPURL(_ url: String, pathAllowed: Bool) -> Bool {
            guard let schemeEnd = url.firstRange(of: "://"), ["http", "https"].contains(url[..<schemeEnd.lowerBound])
            else { return false }
            let rest = url[schemeEnd.upperBound...]
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            let path = rest.dropFirst(authority.count)
            return !authority.isEmpty && !authority.contains("@")
                && url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
                && (pathAllowed ? !path.contains("?") && !path.contains("#") : path.isEmpty || path == "/")
        }
    }
}
