"""Medians, percentiles and the table every scenario's rows go into (stdout and out/bench/report.md)."""

import os

from places import OUT


def median_run(repeat, run):
    return median_of([run() for _ in range(repeat)])


def median_of(runs):
    """The run of median wall time, with the highest peak RSS of all the runs."""
    runs = sorted(runs, key=lambda r: r["wall"])
    best = dict(runs[len(runs) // 2])
    best["rss"] = max(r["rss"] for r in runs)
    return best


def percentile(values, p):
    values = sorted(values)
    if not values:
        return float("nan")
    k = min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))
    return values[k]


def write(header, rows, notes):
    """Prints the table of `rows` ([(label, richpush run, curl run, URLSession run, payloads)]) under the `header`
    line, then the notes, and writes the same to out/bench/report.md."""
    lines = [
        header,
        "",
        "| scenario | runner | wall s | payloads/s | MB/s | p50 ms | p99 ms | peak RSS MiB |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, rp, cu, us, count in rows:
        mb = rp["bytes"] / 1e6
        lines.append(f"| {name} | richpush stream | {rp['wall']:.2f} | {count / rp['wall']:.0f} | "
                     f"{mb / rp['wall']:.0f} | {percentile(rp['latencies'], 50):.1f} | "
                     f"{percentile(rp['latencies'], 99):.1f} | {rp['rss']:.1f} |")
        for label, other in (("curl --parallel-max 64", cu), ("URLSession, TaskGroup 64", us)):
            if other:
                lines.append(f"| | {label} | {other['wall']:.2f} | {count / other['wall']:.0f} | "
                             f"{mb / other['wall']:.0f} | | | {other['rss']:.1f} |")
        if rp["outcomes"].get("complete", 0) != count:
            lines.append(f"| | (richpush outcomes: {rp['outcomes']}) | | | | | | |")
    lines += [""] + [f"- {n}" for n in notes]
    report = "\n".join(lines)
    print(report)
    with open(os.path.join(OUT, "report.md"), "w") as f:
        f.write(report + "\n")
