import RichPushCore
import RichPushStore

/// The settings every transfer of one fetcher shares.
package struct FetchSettings: Sendable {
    package var network: NetworkSettings
    package var limits: LimitSettings
    /// Where bodies are written: attachment directories made ahead, off the loop's thread (none on a tmpfs:
    /// `makesAhead`).
    package var spares: SpareAttachments
    /// How large bodies may grow, before and after their type is known.
    package var caps: BodyCaps
    /// The checks every URL passes before a request is made to it, the first and each redirect's.
    var urlCheck: URLCheck

    /// How refusals name the settings that would lift them (`URLCheck`, `CurlFailure`).
    var names: SettingNames

    package init(
        network: NetworkSettings, limits: LimitSettings, spares: SpareAttachments, caps: BodyCaps,
        names: SettingNames = SettingNames()
    ) {
        self.network = network
        self.limits = limits
        self.spares = spares
        self.caps = caps
        self.names = names
        urlCheck = URLCheck(
            allowHTTP: network.allowHTTP, maximumLength: network.maximumURLLength, allowedPorts: network.allowedPorts,
            names: names)
    }
}
