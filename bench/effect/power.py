"""`python -m bench.effect.power`: episodes per arm needed to detect a change, at 5%
two-sided significance and 80% power (two proportions, normal approximation; a conservative
figure for the paired design, which needs fewer when arms agree pair by pair).

    python -m bench.effect.power --rate 0.15 --relative 0.30    # loop rate 15% -> 10.5%
    python -m bench.effect.power --rate 0.12 --absolute 0.10    # success 12% -> 22%
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from statistics import NormalDist

Z_ALPHA = NormalDist().inv_cdf(0.975)
Z_POWER = NormalDist().inv_cdf(0.80)


def episodes_per_arm(p1: float, p2: float) -> int:
    """Episodes per arm to tell rate `p1` from `p2`."""
    pbar = (p1 + p2) / 2
    top = Z_ALPHA * math.sqrt(2 * pbar * (1 - pbar)) + Z_POWER * math.sqrt(
        p1 * (1 - p1) + p2 * (1 - p2)
    )
    return math.ceil(top**2 / (p1 - p2) ** 2)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the episodes per arm; exit 2 on a bad argument."""
    p = argparse.ArgumentParser(prog="python -m bench.effect.power")
    p.add_argument("--rate", type=float, required=True, help="the direct arm's rate (0..1)")
    p.add_argument("--relative", type=float, help="relative change to detect (0.25 = -25%%)")
    p.add_argument("--absolute", type=float, help="absolute change (0.10 = +10 points)")
    args = p.parse_args(argv)
    if args.absolute is not None:
        other = args.rate + args.absolute
    else:
        other = args.rate * (1 - (args.relative if args.relative is not None else 0.25))
    if not (0 < args.rate < 1 and 0 < other < 1 and other != args.rate):
        print("bench.effect.power: rates must stay within 0..1 and differ", file=sys.stderr)
        return 2
    n = episodes_per_arm(args.rate, other)
    print(f"{args.rate:.1%} -> {other:.1%}: {n} episodes per arm (5% two-sided, 80% power)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
