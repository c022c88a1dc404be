internal import CSystem

#if canImport(Glibc)
    import Glibc
#endif

/// How the process's allocator treats freed memory (glibc's malloc). The fetch loop holds each body of up to
/// `limits.heldBodyBytes` in memory until it is complete, and the task that stores it frees it: thousands of blocks
/// of about a body's size a second, allocated on the loop's thread and freed on others. With glibc's defaults each
/// free at the top of an arena past 128 KiB gives the pages back to the kernel (and a block past its moving mmap
/// threshold is mapped and unmapped whole), and the next body faults them in again: 6 page faults a payload in the
/// benchmark's unique scenario (100 KB bodies), 2 with these settings, about 4% of the run's CPU.
///
/// Set once at start-up by `richpush` (a process embedding the library may set the same with `GLIBC_TUNABLES`);
/// a `GLIBC_TUNABLES` that sets either threshold itself wins, and nothing is changed.
enum FreedMemory {
    /// Freed memory at the top of an arena kept for reuse, at most (M_TRIM_THRESHOLD; glibc's default 128 KiB): the
    /// most a fetch loop holds at once by default (`limits.heldBytes`, 16 MiB). The process's resident size
    /// stays near its peak after a burst rather than falling back, by at most this much an arena.
    static let keptBytes = 16 << 20

    /// Blocks smaller than this come from the arenas; larger ones are mapped on their own (M_MMAP_THRESHOLD; glibc
    /// starts at 128 KiB and raises it as mapped blocks are freed): above a held body's largest buffer by default
    /// (1 MiB, grown by doubling).
    static let mappedFromBytes = 4 << 20

    /// The `GLIBC_TUNABLES` names that, when present, leave the allocator as the user set it.
    static let userSettings = ["glibc.malloc.trim_threshold", "glibc.malloc.mmap_threshold"]

    /// Whether to set the thresholds, given the value of `GLIBC_TUNABLES` (nil: not set).
    static func shouldSet(tunables: String?) -> Bool {
        guard let tunables else { return true }
        return !userSettings.contains { name in tunables.contains(name) }
    }

    /// Sets the thresholds unless `GLIBC_TUNABLES` sets either; whether they were set. Call before the threads start.
    @discardableResult
    static func keep() -> Bool {
        let tunables = getenv("GLIBC_TUNABLES").map { String(cString: $0) }
        guard shouldSet(tunables: tunables) else { return false }
        return csystem_keep_freed_memory(Int32(keptBytes), Int32(mappedFromBytes)) == 0
    }
}
