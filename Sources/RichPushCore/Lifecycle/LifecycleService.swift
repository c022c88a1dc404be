/// A long-running piece of a program, in the shape of swift-service-lifecycle's `Service`: `run()` lives as long
/// as the service does. Declared here because RichPush takes no outside package; a type conforming to it has the
/// one requirement of that protocol, so an application that uses swift-service-lifecycle conforms it there with an
/// empty extension (`extension Enricher: ServiceLifecycle.Service {}`) and adds it to its `ServiceGroup`.
public protocol LifecycleService: Sendable {
    /// Runs until the service has stopped. See each conforming type for what ends it.
    func run() async throws
}
