import FixtureOrigin
import Foundation

// Serves Fixtures/media (or --root DIR) on 127.0.0.1:PORT through the fixture routes, for `make demo`.
// Usage: richpush-fixture-origin [--port N] [--root DIR] [--seconds S]. Runs until killed, or for S seconds
// (default 600), so that a forgotten origin never outlives its demo for long.

var port = 8787
var root = FixtureRoutes.fixturesDirectory + "/media"
var lifetime = 600
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--port": port = Int(arguments.popFirst() ?? "") ?? port
    case "--root": root = arguments.popFirst() ?? root
    case "--seconds": lifetime = Int(arguments.popFirst() ?? "") ?? lifetime
    default:
        FileHandle.standardError.write(Data("unknown argument: \(argument)\n".utf8))
        exit(64)
    }
}
do {
    let origin = try HTTPOrigin(host: "127.0.0.1", port: port, handler: FixtureRoutes.handler(mediaDirectory: root))
    FileHandle.standardOutput.write(Data("serving \(root) on http://127.0.0.1:\(origin.port)\n".utf8))
    sleep(UInt32(lifetime))
    origin.stop()
} catch {
    FileHandle.standardError.write(Data("richpush-fixture-origin: \(error)\n".utf8))
    exit(1)
}
