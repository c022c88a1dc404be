import Glibc
import RichPush

/// libFuzzer's entry point: parses the input as a payload; when it parses, checks the lossless promise (what
/// we write parses back to the same value) and runs every convention over it. Any crash, trap or sanitizer
/// report is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPayload(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    guard let payload = try? PushPayload(parsing: bytes) else { return 0 }
    let written = JSONWriter.bytes(payload.json)
    guard let again = try? PushPayload(parsing: written) else {
        fatalError("written payload does not parse: \(String(decoding: written, as: UTF8.self))")
    }
    guard again == payload, JSONWriter.bytes(again.json) == written else {
        fatalError("round trip changed the payload: \(String(decoding: written, as: UTF8.self))")
    }
    _ = payload.isMutable
    _ = ConventionRegistry.standard.scan(payload)
    return 0
}

// `make fuzz` builds this target with `-sanitize=fuzzer,address -DFUZZING`: main() then hands over to
// libFuzzer's driver (LLVMFuzzerRunDriver, as programs with their own main do). Built plainly (as
// `swift build` does), it is a small program that says how to run it.
#if FUZZING
    @_silgen_name("LLVMFuzzerRunDriver")
    func LLVMFuzzerRunDriver(
        _ argc: UnsafeMutablePointer<Int32>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
    ) -> Int32
#endif

@main
enum FuzzMain {
    static func main() {
        #if FUZZING
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzPayload(data, size) })
        #else
            print("richpush-fuzz is a libFuzzer target: run `make fuzz`")
        #endif
    }
}
