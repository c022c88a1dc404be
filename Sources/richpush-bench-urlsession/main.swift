import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The benchmark's baseline: what a Swift developer would write today to fetch a list of URLs to files with
// URLSession, 64 at a time in a TaskGroup. Usage: richpush-bench-urlsession URLS-FILE OUT-DIR [PARALLEL]
// (one URL per line). Prints the number of files written and the bytes.

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    FileHandle.standardError.write(Data("usage: richpush-bench-urlsession URLS-FILE OUT-DIR [PARALLEL]\n".utf8))
    exit(64)
}
let urls = try String(contentsOfFile: arguments[1], encoding: .utf8).split(separator: "\n").compactMap {
    URL(string: String($0))
}
let outDirectory = URL(fileURLWithPath: arguments[2])
let parallel = arguments.count > 3 ? Int(arguments[3]) ?? 64 : 64
try FileManager.default.createDirectory(at: outDirectory, withIntermediateDirectories: true)

let session = URLSession(configuration: .default)
let (files, bytes) = await withTaskGroup(of: Int?.self) { group in
    var next = 0
    var files = 0
    var bytes = 0
    func add() {
        guard next < urls.count else { return }
        let index = next
        next += 1
        group.addTask {
            guard let (data, response) = try? await session.data(from: urls[index]),
                (response as? HTTPURLResponse)?.statusCode == 200
            else { return nil }
            let file = outDirectory.appendingPathComponent("\(index)-" + urls[index].lastPathComponent)
            guard (try? data.write(to: file)) != nil else { return nil }
            return data.count
        }
    }
    for _ in 0..<parallel { add() }
    while let result = await group.next() {
        if let count = result {
            files += 1
            bytes += count
        }
        add()
    }
    return (files, bytes)
}
print("\(files) files, \(bytes) bytes")
