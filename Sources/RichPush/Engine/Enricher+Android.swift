import RichPushCore
import RichPushMedia

extension Enricher {
    /// The variant cache's settings: the media cache's bounds, and no time to live, since a variant is named by its
    /// source's bytes (their SHA-256) and the engine's Android settings, which do not change.
    static func variantCache(_ configuration: Configuration, fetcher: Fetcher) -> MediaCache? {
        guard configuration.cache.enabled, fetcher.converts else { return nil }
        var settings = configuration.cache
        settings.timeToLive = .seconds(Int64(Int32.max))
        // Its own counts: a variant found is not a URL's cache hit.
        return MediaCache(
            source: fetcher, root: fetcher.root, statistics: StatisticsCounter(), settings: settings,
            inFlight: "the same image's Android variant was being made")
    }

    /// The Android variant of `media` (an FCM message's Android reference, fetched), by `deadline`: `media` itself
    /// when it is one already (`AndroidVariant`); else made by the converter into a directory of its own, once per
    /// source for every payload that sends it (the variant cache: single flight, then a hard link per payload), and
    /// `media`'s file removed; or the failure saying why, `media`'s file removed. Before it is removed, the media
    /// cache's entry of `url` that is still that file gets a link of its own (`MediaCache.keep`): the next payload of
    /// the URL fetched it again.
    func androidVariant(
        of media: FetchedMedia, url: String, deadline: ContinuousClock.Instant
    ) async -> Result<FetchedMedia, FetchFailure> {
        let variant = AndroidVariant(maximumDimension: configuration.transform.androidMaximumDimension)
        switch variant.decision(for: media) {
        case .keep:
            return .success(media)
        case .refuse(let failure):
            cache?.keep(media, of: url)
            fetcher.root.remove(media)
            return .failure(failure)
        case .convert(let reasons):
            cache?.keep(media, of: url)
            guard let variants else {
                return await fetcher.androidVariant(of: media, variant, reasons: reasons, deadline: deadline)
            }
            let source = AndroidVariantSource(fetcher: fetcher, media: media, variant: variant, reasons: reasons)
            let made = await variants.attachment(for: media.sha256, deadline: deadline, from: source)
            // Another payload's conversion served this one: its own copy of the source is not needed.
            if !source.ran { fetcher.root.remove(media) }
            return made.map { made in
                var made = made
                made.provenance = media.provenance
                return made
            }
        }
    }
}

/// One payload's source of an Android variant, for the variant cache: converts that payload's copy of the source
/// when the cache asks (the payload leads), once.
private final class AndroidVariantSource: MediaSource {
    let fetcher: Fetcher
    let media: FetchedMedia
    let variant: AndroidVariant
    let reasons: [String]
    private let started = LockedValue(false)

    init(fetcher: Fetcher, media: FetchedMedia, variant: AndroidVariant, reasons: [String]) {
        self.fetcher = fetcher
        self.media = media
        self.variant = variant
        self.reasons = reasons
    }

    /// Whether the conversion was asked for (it then removes the payload's copy itself).
    var ran: Bool { started.withLock { $0 } }

    func fetch(_ key: String, deadline: ContinuousClock.Instant, validators: Validators) async -> MediaFetchOutcome {
        guard
            started.withLock({ ran in
                defer { ran = true }; return !ran
            })
        else {
            return .failed(FetchFailure(.cancelled, "the Android variant's source was used already"))
        }
        switch await fetcher.androidVariant(of: media, variant, reasons: reasons, deadline: deadline) {
        case .success(let made): return .stored(made)
        case .failure(let failure): return .failed(failure)
        }
    }
}
