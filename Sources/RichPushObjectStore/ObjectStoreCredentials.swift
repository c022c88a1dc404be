import RichPushCore

#if canImport(Glibc)
    import Glibc
#endif

/// The keys an object store's requests are signed with (AWS Signature Version 4). Their description never shows the
/// secret or the session token: only the access key id, which identifies, and whether a token is there.
public struct ObjectStoreCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The access key id (`AWS_ACCESS_KEY_ID`, `aws_access_key_id`).
    public var accessKeyID: String
    /// The secret access key (`AWS_SECRET_ACCESS_KEY`, `aws_secret_access_key`).
    public var secretAccessKey: String
    /// A temporary session's token (`AWS_SESSION_TOKEN`, `aws_session_token`), sent as `x-amz-security-token`.
    public var sessionToken: String?
    /// Where they were read from, for messages: `environment` or `<file> [profile]`.
    public var origin: String

    /// Credentials given in code.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil, origin: String = "code") {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.origin = origin
    }

    /// `access key <id> (from <origin>)`: never the secret.
    public var description: String { "access key \(accessKeyID) (from \(origin))" }

    /// The credentials found in the standard places, in the AWS tools' order: `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN` when set) in `environment`; else the shared credentials
    /// file `credentialsFile`, or `AWS_SHARED_CREDENTIALS_FILE`, or `~/.aws/credentials` (`HOME`), at the profile
    /// `profile`, or `AWS_PROFILE`, or `default`.
    /// - Throws: `ConfigurationError` for `credentials`: only one of the two variables set, a file that cannot be
    ///   read or holds no such profile, a profile without both keys, or nothing found anywhere (the message lists
    ///   where it looked). No message holds a secret.
    public static func standard(
        environment: [String: String], credentialsFile: String? = nil, profile: String? = nil
    ) throws(ConfigurationError) -> ObjectStoreCredentials {
        func nonEmpty(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        switch (nonEmpty("AWS_ACCESS_KEY_ID"), nonEmpty("AWS_SECRET_ACCESS_KEY")) {
        case (let id?, let secret?):
            return ObjectStoreCredentials(
                accessKeyID: id, secretAccessKey: secret, sessionToken: nonEmpty("AWS_SESSION_TOKEN"),
                origin: "the environment")
        case (_?, nil):
            throw failure(.malformed, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not")
        case (nil, _?):
            throw failure(.malformed, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not")
        case (nil, nil):
            break
        }
        let profile = profile ?? nonEmpty("AWS_PROFILE") ?? "default"
        let explicit = credentialsFile ?? nonEmpty("AWS_SHARED_CREDENTIALS_FILE")
        guard let path = explicit ?? nonEmpty("HOME").map({ $0 + "/.aws/credentials" }) else {
            throw failure(.malformed, "none found: AWS_ACCESS_KEY_ID is not set, and there is no HOME to look in")
        }
        let bytes: [UInt8]
        switch readFile(path) {
        case .success(let read):
            bytes = read
        case .failure(let error) where error.errno == ENOENT && explicit == nil:
            throw failure(
                .malformed,
                "none found: AWS_ACCESS_KEY_ID is not set, and there is no shared credentials file at \(path)")
        case .failure(let error):
            throw failure(
                .unreadable,
                "cannot read the shared credentials file \(path): \(String(cString: strerror(error.errno)))")
        }
        return try parse(String(decoding: bytes, as: UTF8.self), profile: profile, file: path)
    }

    /// The credentials of `profile` in the text of a shared credentials file (INI: `[profile]` sections of
    /// `key = value` lines, `#` and `;` comments).
    static func parse(_ text: String, profile: String, file: String) throws(ConfigurationError)
        -> ObjectStoreCredentials
    {
        var section: String? = nil
        var values: [String: String] = [:]
        var found = false
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("["), line.hasSuffix("]") {
                section = String(line.dropFirst().dropLast()).trimmingSpaces
                found = found || section == profile
                continue
            }
            guard section == profile, let equals = line.firstIndex(of: "=") else { continue }
            let key = String(line[..<equals]).trimmingSpaces.lowercased()
            values[key] = String(line[line.index(after: equals)...]).trimmingSpaces
        }
        let place = "\(file) [\(profile)]"
        guard found else {
            throw failure(.malformed, "the shared credentials file \(file) has no profile [\(profile)]")
        }
        guard let id = values["aws_access_key_id"], !id.isEmpty else {
            throw failure(.malformed, "\(place) has no aws_access_key_id")
        }
        guard let secret = values["aws_secret_access_key"], !secret.isEmpty else {
            throw failure(.malformed, "\(place) has no aws_secret_access_key")
        }
        let token = values["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 }
        return ObjectStoreCredentials(accessKeyID: id, secretAccessKey: secret, sessionToken: token, origin: place)
    }

    /// The file at `path` (links followed: a mounted secret is often one), up to 1 MiB; or the errno.
    private static func readFile(_ path: String) -> Result<[UInt8], ReadError> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(ReadError(errno: errno)) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count < 1 << 20 {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return .failure(ReadError(errno: errno)) }
            guard count > 0 else { break }
            bytes += chunk.prefix(count)
        }
        return .success(bytes)
    }

    private struct ReadError: Error { let errno: Int32 }

    private static func failure(_ code: EnrichmentProblem.Code, _ detail: String) -> ConfigurationError {
        ConfigurationError(field: "credentials", code: code, detail: detail)
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
