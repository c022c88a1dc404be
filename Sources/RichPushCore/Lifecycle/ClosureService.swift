/// A service that is a closure: `run()` calls it. For a program's own work (`stream`'s pipeline) beside its
/// services.
package struct ClosureService: LifecycleService {
    private let body: @Sendable () async throws -> Void

    package init(_ body: @escaping @Sendable () async throws -> Void) { self.body = body }

    package func run() async throws { try await body() }
}
