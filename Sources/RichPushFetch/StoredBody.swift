import RichPushCore
import RichPushStore

/// A body stored whole and renamed to its type's extension, not yet hashed: what a transfer delivers. The digest
/// stage above reads the file and makes it `FetchedMedia` (`media(sha256:)`); until then there is no hash to say.
package struct StoredBody: Sendable, Hashable {
    /// The absolute path of the stored file, `<root>/<uuid>/<uuid>.<ext>`.
    package var path: String
    /// The directory made for it alone.
    package var directory: String
    /// The type the sniffer decided.
    package var type: MediaType
    /// The bytes the transfer wrote.
    package var bytes: Int
    /// The response's validators.
    package var validators: Validators
    /// An image's width and height when its first bytes said them, else nil.
    package var dimensions: ImageSize?
    /// The redirects the transfer followed and the Content-Type its final response sent.
    package var provenance: FetchedMedia.Provenance
    /// The file as it was committed (`PartialAttachment.identity`), nil when unknown.
    package var identity: FileIdentity? = nil

    /// Closes `partial` (written whole: `bytes` of `type`) and renames it to its type's extension: the stored body,
    /// with the response's `validators`, the first bytes' `dimensions` and the transfer's `provenance`; or
    /// `store-failed` with the system's reason (nothing is left behind). The one commit of a body streamed to its
    /// file (`MediaBody`) and of one held in memory (`HeldBody`).
    static func committing(
        _ partial: PartialAttachment, type: MediaType, bytes: Int, validators: Validators, dimensions: ImageSize?,
        provenance: FetchedMedia.Provenance
    ) -> Result<StoredBody, FetchFailure> {
        do {
            let path = try partial.commit(fileExtension: type.fileExtension)
            return .success(
                StoredBody(
                    path: path, directory: partial.directory, type: type, bytes: bytes, validators: validators,
                    dimensions: dimensions, provenance: provenance, identity: partial.identity))
        } catch {
            return .failure(FetchFailure(.storeFailed, error.detail))
        }
    }

    /// The stored media, once its bytes hash to `sha256`.
    package func media(sha256: String) -> FetchedMedia {
        var media = FetchedMedia(
            path: path, directory: directory, type: type, bytes: bytes, sha256: sha256, validators: validators,
            dimensions: dimensions)
        media.provenance = provenance
        media.identity = identity
        return media
    }
}
