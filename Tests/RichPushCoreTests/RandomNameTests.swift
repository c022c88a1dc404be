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

    @Test("names are drawn from the kernel 4 KiB at a time, each byte handed out once")
    func drawnInPools() {
        let before = RandomBytes.draws
        let names = (0..<1000).map { _ in RandomName.uuid() }
        let drawn = RandomBytes.draws - before
        // 1,000 names take 16,000 bytes: at least 3 draws of 4 KiB, 4 or 5 at most for this loop (other tests make
        // names meanwhile, in the same process); one draw a name would be 1,000.
        #expect(drawn >= 3)
        #expect(drawn < 100)
        #expect(Set(names).count == 1000)
        // Buffers filled one after another: none zero (bytes zeroed before they were copied), none repeated (a
        // pool's bytes handed out twice).
        var buffers = Set<[UInt8]>()
        for _ in 0..<600 {
            var bytes = [UInt8](repeating: 0, count: 16)
            bytes.withUnsafeMutableBytes { RandomBytes.fill($0) }
            #expect(bytes != [UInt8](repeating: 0, count: 16))
            buffers.insert(bytes)
        }
        #expect(buffers.count == 600)
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
