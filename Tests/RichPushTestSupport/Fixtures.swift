import FixtureOrigin
import Foundation

/// Where the fixtures are: `Fixtures/` at the top of the checkout.
package enum FixtureDirectory {
    package static var root: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fixtures").path
    }
    package static var payloads: String { root + "/payloads" }
}

/// The bytes of a fixture media file.
package func fixture(_ name: String) -> [UInt8] {
    Array(FileManager.default.contents(atPath: FixtureRoutes.fixturesDirectory + "/media/" + name)!)
}
