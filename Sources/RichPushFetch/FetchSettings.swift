import RichPushCore
import RichPushStore

/// The settings every transfer of one fetcher shares.
///
/// One reference to storage shared by every copy, not the 336 bytes of its fields: a copy goes into each
/// `TransferRequest` (a tenant's), which is held by every transfer waiting in the loop's inbox and admission queue
/// and by the async frames that build one; inline, the settings were most of their size. Read-only after `init`.
package struct FetchSettings: Sendable {
    /// The fields, set once.
    private final class Storage: Sendable {
        let network: NetworkSettings
        let limits: LimitSettings
        let spares: SpareAttachments
        let caps: BodyCaps
        let urlCheck: URLCheck
        let names: SettingNames
        let certificateBundle: CertificateBundleCopy?

        init(
            network: NetworkSettings, limits: LimitSettings, spares: SpareAttachments, caps: BodyCaps,
            names: SettingNames
        ) {
            self.network = network
            self.limits = limits
            self.spares = spares
            self.caps = caps
            self.names = names
            certificateBundle = network.caBundle.map { CertificateBundleCopy.shared(of: $0) }
            urlCheck = URLCheck(
                allowHTTP: network.allowHTTP, maximumLength: network.maximumURLLength,
                allowedPorts: network.allowedPorts, names: names)
        }
    }

    /// The fields, shared by every copy.
    private let storage: Storage

    /// How transfers are made and where they may go (`NetworkSettings`).
    package var network: NetworkSettings { storage.network }
    /// Bounds on sizes: the bodies' caps, the sniffed head, the response head (`LimitSettings`).
    package var limits: LimitSettings { storage.limits }
    /// Where bodies are written: attachment directories made ahead, off the loop's thread (no spares on a tmpfs:
    /// `makesSpares`).
    package var spares: SpareAttachments { storage.spares }
    /// How large bodies may grow, before and after their type is known.
    package var caps: BodyCaps { storage.caps }
    /// The checks every URL passes before a request is made to it, the first and each redirect's.
    var urlCheck: URLCheck { storage.urlCheck }

    /// The copy of `network.caBundle` libcurl reads (CURLOPT_CAINFO), made as these settings are; nil without one.
    var certificateBundle: CertificateBundleCopy? { storage.certificateBundle }

    /// How refusals name the settings that would lift them (`URLCheck`, `CurlFailure`).
    var names: SettingNames { storage.names }

    package init(
        network: NetworkSettings, limits: LimitSettings, spares: SpareAttachments, caps: BodyCaps,
        names: SettingNames = SettingNames()
    ) {
        storage = Storage(network: network, limits: limits, spares: spares, caps: caps, names: names)
    }
}
