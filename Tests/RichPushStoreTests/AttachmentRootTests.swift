import Foundation
import RichPushTestSupport
import Testing

@testable import RichPushCore
@testable import RichPushStore

@Suite("The attachments root")
struct AttachmentRootTests {
    @Test(
        """
        a root renamed, or its path then made another directory or a link to it, hands back no path under the old \
        name: the attachment is refused, naming the root, and nothing of it is left
        """,
        arguments: ["renamed", "replaced by a directory", "replaced by a link to it"])
    func rootMoved(swap: String) throws {
        let parent = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: parent) }
        let path = parent + "/root"
        let moved = parent + "/moved"
        let root = try AttachmentRoot(opening: path)
        let first = try root.begin()
        try first.write(Array("first".utf8))
        let kept = try first.commit(fileExtension: "jpg")
        #expect(kept.hasPrefix(path + "/"))
        #expect(FileManager.default.contents(atPath: kept) == Data("first".utf8))
        let keptName = String(kept.dropFirst(path.count + 1))
        let linked = try root.link(keptName, in: root.directory, fileExtension: "jpg")
        #expect(FileManager.default.contents(atPath: linked.path) == Data("first".utf8))
        let before = try FileManager.default.contentsOfDirectory(atPath: path).sorted()
        let partial = try root.begin()
        try partial.write(Array("second".utf8))

        #expect(rename(path, moved) == 0)
        switch swap {
        case "replaced by a directory":
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        case "replaced by a link to it":
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: moved)
        default: break
        }
        for attempt in ["commit", "link"] {
            let error = #expect(throws: StoreError.self, "\(swap): \(attempt)") {
                if attempt == "commit" {
                    _ = try partial.commit(fileExtension: "jpg")
                } else {
                    _ = try root.link(keptName, in: root.directory, fileExtension: "jpg")
                }
            }
            #expect(error?.description.contains("the attachments root \(path) was moved") == true, "\(swap)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: moved).sorted() == before, "nothing left")
    }
}
