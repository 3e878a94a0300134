"""How much bench.compare's recovery-proxy figures move from run to run on this machine.

    python -m bench.spread [--runs 5] [--proxy-tree DIR]

Runs bench.compare's recovery-proxy phase (direct / recovery-proxy interleaved, every row)
`--runs` times, each with a fresh mock and proxy, and prints the lowest, median and highest
added p50 per row: on a shared VM the host alone moves them by a third.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from bench.common import ROOT
from bench.compare import added, cpu_probe, log, mock_server, pair_rows, proxy_server, running

COUNTS = {10: 300, 100: 300, 1000: 100, "grow": 200, "idle": 40}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--proxy-tree", default=ROOT)
    args = parser.parse_args()
    figures: dict[str, list[float]] = {}
    probes = []
    for run in range(args.runs):
        probes.append(cpu_probe())
        with tempfile.TemporaryDirectory() as tmp, running(mock_server(tmp)) as mock:
            store = f"sqlite:{tmp}/sessions.db"
            proxy = proxy_server(f"{mock.base}/v1", store, tmp, args.proxy_tree)
            with running(proxy):
                proxy.wait_idle()
                servers = {"direct": mock, "recovery-proxy": proxy}
                rows, _ = pair_rows("recovery-proxy", servers, COUNTS, 30, {})
        for row, samples in rows.items():
            figures.setdefault(row, []).append(added(samples, "recovery-proxy"))
        log(f"run {run + 1}/{args.runs} done")
    print(f"recovery-proxy added p50 (ms) over {args.runs} runs")
    print(f"machine speed (bench.compare.cpu_probe, ms, lower is faster): {probes[0]:.0f}", end="")
    print(f" to {probes[-1]:.0f}, range {min(probes):.0f}-{max(probes):.0f}")
    print(f"{'messages':16} {'lowest':>7} {'median':>7} {'highest':>7}")
    for row, values in figures.items():
        low, mid, high = min(values), statistics.median(values), max(values)
        print(f"{row:16} {low:7.2f} {mid:7.2f} {high:7.2f}")


if __name__ == "__main__":
    main()
