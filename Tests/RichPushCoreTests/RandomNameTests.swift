import Foundation
import Testing

@testable import RichPushCore

@Suite("Random names")
struct RandomNameTests {
    @Test("random names are version-4 UUIDs, lowercase, distinct")
    func randomNames() {
        let names = (0..<1000).map { _ in RandomName.uuid() }
        #expect(Set(names).count == 1000)
        for name in names.prefix(50) {
            let parsed = UUID(uuidString: name)
            #expect(parsed != nil)
            #expect(parsed?.uuidString.lowercased() == name)
            #expect(Array(name)[14] == "4")
            #expect("89ab".contains(Array(name)[19]))
        }
    }

    @Test(
        "UUID shapes",
        arguments: [
            ("0f9d2c4e-1b2a-4c3d-8e9f-0a1b2c3d4e5f", true), ("0F9D2C4E-1B2A-4C3D-8E9F-0A1B2C3D4E5F", true),
            ("keep-me", false), ("0f9d2c4e1b2a4c3d8e9f0a1b2c3d4e5f0000", false),
            ("0f9d2c4e-1b2a-4c3d-8e9f-0a1b2c3d4e5g", false),
        ])
    func uuidShape(name: String, valid: Bool) {
        #expect(RandomName.isUUID(name) == valid)
    }
}
