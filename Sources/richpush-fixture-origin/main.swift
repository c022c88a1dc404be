import FixtureOrigin
import Foundation

// Serves Fixtures/media (or --root DIR) on 127.0.0.1:PORT through the fixture routes, for `make demo`.
// Usage: richpush-fixture-origin [--port N] [--root DIR]. Runs until killed or until stdin closes.

var port = 8787
var root = FixtureRoutes.fixturesDirectory + "/media"
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--port": port = Int(arguments.popFirst() ?? "") ?? port
    case "--root": root = arguments.popFirst() ?? root
    default:
        FileHandle.standardError.write(Data("unknown argument: \(argument)\n".utf8))
        exit(64)
    }
}
do {
    let origin = try HTTPOrigin(host: "127.0.0.1", port: port, handler: FixtureRoutes.handler(mediaDirectory: root))
    FileHandle.standardOutput.write(Data("serving \(root) on http://127.0.0.1:\(origin.port)\n".utf8))
    // Stay up until our standard input closes (the demo script holds it open) or a signal ends us.
    while let _ = readLine() {}
    origin.stop()
} catch {
    FileHandle.standardError.write(Data("richpush-fixture-origin: \(error)\n".utf8))
    exit(1)
}
