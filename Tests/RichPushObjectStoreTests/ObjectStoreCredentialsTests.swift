import Foundation
import RichPushCore
import RichPushTestSupport
import Testing

@testable import RichPushObjectStore

@Suite("ObjectStoreCredentials: the AWS tools' order, a shared file's profiles, no secret in any message")
struct ObjectStoreCredentialsTests {
    let file = """
        # a comment
        [default]
        aws_access_key_id = AKDEFAULT
        aws_secret_access_key = SECRETDEFAULT

        [campaigns]
        aws_access_key_id=AKCAMPAIGN
        ; another comment
        aws_secret_access_key =  SECRETCAMPAIGN\t
        aws_session_token = TOKENCAMPAIGN
        [half]
        aws_access_key_id = AKHALF
        """

    func withFile<T>(_ body: (String) throws -> T) throws -> T {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/credentials"
        try Data(file.utf8).write(to: URL(fileURLWithPath: path))
        return try body(path)
    }

    @Test("The environment's keys come first, with the session token")
    func environmentFirst() throws {
        try withFile { path in
            let credentials = try ObjectStoreCredentials.standard(
                environment: [
                    "AWS_ACCESS_KEY_ID": "AKENV", "AWS_SECRET_ACCESS_KEY": "SECRETENV", "AWS_SESSION_TOKEN": "TOKENENV",
                    "AWS_SHARED_CREDENTIALS_FILE": path,
                ], credentialsFile: path)
            #expect(credentials.accessKeyID == "AKENV")
            #expect(credentials.secretAccessKey == "SECRETENV")
            #expect(credentials.sessionToken == "TOKENENV")
            #expect(credentials.description == "access key AKENV (from the environment)")
        }
    }

    @Test("Then the shared file: the flag's path, else AWS_SHARED_CREDENTIALS_FILE, at AWS_PROFILE or default")
    func sharedFile() throws {
        try withFile { path in
            let byDefault = try ObjectStoreCredentials.standard(environment: [:], credentialsFile: path)
            #expect(byDefault.accessKeyID == "AKDEFAULT" && byDefault.secretAccessKey == "SECRETDEFAULT")
            #expect(byDefault.sessionToken == nil)
            let profile = try ObjectStoreCredentials.standard(
                environment: ["AWS_SHARED_CREDENTIALS_FILE": path, "AWS_PROFILE": "campaigns"])
            #expect(profile.accessKeyID == "AKCAMPAIGN" && profile.secretAccessKey == "SECRETCAMPAIGN")
            #expect(profile.sessionToken == "TOKENCAMPAIGN")
            #expect(profile.origin == "\(path) [campaigns]")
            let home = try ObjectStoreCredentials.standard(
                environment: ["HOME": "/nonexistent-home"], credentialsFile: path)
            #expect(home.accessKeyID == "AKDEFAULT")
        }
    }

    @Test(
        "Each way of finding nothing says where it looked, never a secret",
        arguments: [
            (["AWS_ACCESS_KEY_ID": "AKONLY"], "AWS_SECRET_ACCESS_KEY is not"),
            (["AWS_SECRET_ACCESS_KEY": "SECRETONLY"], "AWS_ACCESS_KEY_ID is not"),
            (["HOME": "/nonexistent-home"], "no shared credentials file at /nonexistent-home/.aws/credentials"),
            (["AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials"], "cannot read the shared credentials file"),
            (["AWS_PROFILE": "missing"], "has no profile [missing]"),
            (["AWS_PROFILE": "half"], "[half] has no aws_secret_access_key"),
        ])
    func nothingFound(environment: [String: String], message: String) throws {
        try withFile { path in
            let explicit = environment.keys.contains { $0 == "HOME" || $0 == "AWS_SHARED_CREDENTIALS_FILE" }
            let error = #expect(throws: ConfigurationError.self) {
                try ObjectStoreCredentials.standard(
                    environment: environment, credentialsFile: explicit ? nil : path)
            }
            #expect(error?.field == "credentials")
            #expect(error?.detail.contains(message) == true, "\(error?.detail ?? "")")
            for secret in ["SECRETONLY", "SECRETDEFAULT", "SECRETCAMPAIGN", "TOKENCAMPAIGN"] {
                #expect(error?.detail.contains(secret) == false)
            }
        }
    }
}
