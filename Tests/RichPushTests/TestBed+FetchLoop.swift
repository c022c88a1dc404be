@testable import RichPush
@testable import RichPushFetch
@testable import RichPushMedia
@testable import RichPushStore

extension TestBed {
    /// A fetch loop of the test's own with this bed's settings, so that the test can ask it what only it knows (its
    /// `Census`, the sniffer's count of verdicts reached at once); its types decided by `sniffer`, at once for at
    /// most `sniffingAtOnce` a turn. Stopped by the caller.
    func fetchLoop(
        sniffer: any BodySniffer, sniffingAtOnce: Duration = FetchLoop.defaultSniffingAtOnce
    ) throws -> FetchLoop {
        let spares = SpareAttachments(root: try configuration.store.open(), makesSpares: false, makesFolders: false)
        return FetchLoop(
            settings: FetchSettings(
                network: configuration.network, limits: configuration.limits, spares: spares,
                caps: BodyCaps(limits: configuration.limits, transform: configuration.transform)),
            sniffer: sniffer, sniffingAtOnce: sniffingAtOnce)
    }
}
