"""`--profile`: where `stream`'s CPU goes (issue 13's profile), from `perf record -g`."""

import os
import shutil
import subprocess

from places import OUT

# Each sample of `perf record -g` is put in the first category with a marker in any frame of its call chain. A marker
# is matched against the frame's function, demangled and simplified (`swift demangle --simplified`:
# `Enricher.enrich(_:deadline:)`, no argument types), or, for `lib...` markers, against the frame's library; `leaf`
# categories look at the innermost frame only.
PROFILE_CATEGORIES = (
    ("SHA-256 (digest step)", ("DigestService.", "FileDigest.", "libcrypto"), False),
    ("type sniffing (libmagic's thread)", ("SniffService.", "libmagic"), False),
    ("spares made ahead (their thread)", ("SpareAttachments.run",), False),
    ("cache hits: mkdir + link", ("AttachmentRoot.link(",), False),
    ("receiving (recv)", ("__libc_recv",), False),
    ("writing the file (write)", ("__libc_write",), False),
    ("attachment begin/commit: mkdir, open, rename",
     ("MediaBody.begin", "MediaBody.commit", "SpareAttachments.take", "PartialAttachment."), False),
    ("curl (other)", ("libcurl",), False),
    ("media cache (other)", ("MediaCache.",), False),
    ("results: encode and write", ("EnrichmentResult.json", "JSONWriter."), False),
    ("payload: read and parse",
     ("JSONParser.", "Payload.init", "InputReader", "LineSplitter", "ThreadedSource."), False),
    ("payload: conventions' scan, mutation", ("ConventionRegistry.", "Convention.scan", "EnrichmentRun."), False),
    # Leaf only: every async job's stack starts in the concurrency runtime (`swift_job_run`).
    ("Swift concurrency runtime, Dispatch (leaf)", ("libswift_Concurrency", "libdispatch"), True),
    ("malloc, free, reference counting",
     ("malloc", "free", "swift_retain", "swift_release", "swift_allocObject", "swift_bridgeObjectRe"), True),
)


def profiled(run):
    """Runs `run(wrap)` under perf record; returns (its result, [(category, share)], samples) or (result, None, 0)
    when perf cannot record here."""
    data = os.path.join(OUT, "perf.data")
    wrap = ["perf", "record", "--quiet", "-e", "cpu-clock", "-F", "4000", "-g", "-o", data, "--"]
    if shutil.which("perf") is None:
        return run(()), None, 0
    result = run(wrap)
    script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym,dso"], capture_output=True, text=True)
    os.remove(data)
    chains, frames = [], None
    for line in script.stdout.splitlines() + [""]:
        if not line.strip():
            if frames is not None:
                chains.append(frames)
            frames = None
        elif frames is None:
            frames = []
        else:
            # "<ip> <symbol> (<library>)"
            parts = line.strip().split(None, 1)
            symbol, _, library = (parts[1] if len(parts) > 1 else "").rpartition(" (")
            frames.append((symbol, library.rstrip(")")))
    mangled = sorted({symbol for chain in chains for symbol, _ in chain if symbol.startswith("$s")})
    demangled = subprocess.run(["swift", "demangle", "--simplified", "--compact"], input="\n".join(mangled),
                               capture_output=True, text=True).stdout.splitlines()
    names = dict(zip(mangled, demangled)) if len(demangled) == len(mangled) else {}

    def settle(chain):
        for name, markers, leaf in PROFILE_CATEGORIES:
            for symbol, library in chain[:1] if leaf else chain:
                function = names.get(symbol, symbol)
                if any(library.rsplit("/", 1)[-1].startswith(marker) if marker.startswith("lib") else marker in function
                       for marker in markers):
                    return name
        leaf_library = chain[0][1] if chain else ""
        return "kernel (other)" if "kernel" in leaf_library else "other"

    counts = {}
    for chain in chains:
        name = settle(chain)
        counts[name] = counts.get(name, 0) + 1
    samples = max(len(chains), 1)
    shares = sorted(((name, count / samples) for name, count in counts.items()), key=lambda item: -item[1])
    return result, shares, len(chains)
