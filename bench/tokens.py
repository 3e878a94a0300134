"""How far the token estimate (`recovery_proxy.tokens.count`) is from tiktoken's o200k_base,
against the 4-characters-per-token rule, per corpus; and the fit of its weights.

    python -m bench.tokens          the table of bench/results-tokens.md
    python -m bench.tokens --fit    least-squares weights for `tokens.FEATURES`

Needs tiktoken and o200k_base offline: run it in a venv with the litellm extra (litellm ships
the rank files; `pip install -e '.[litellm]'`), or in .venv-litellm. Corpora: the content of
every entry of tests/data/tool_results*.yaml; the paragraphs of README.md, docs/adoption.md and
rules/*.yaml; the lines of bench/tokens_multilingual.txt (hand-written, non-English error
messages: a sanity check of the two non-ASCII weights, which are set by hand since the other
corpora hold almost no non-ASCII text); a few synthetic shapes (`synthetic()`). The weights
are fitted on tool_results.yaml only; the other corpora are held out.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import yaml

from recovery_proxy import tokens

ROOT = Path(__file__).resolve().parent.parent
LONG = 100  # tokens: the texts budgets are about
FIXED = 2  # the last two features (non-ASCII characters) keep their hand-set weights


def encoder() -> Callable[[str], int]:
    """o200k_base token counts from the rank files litellm ships (no network)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench.tokens needs litellm's rank files: pip install -e '.[litellm]'")
    package = Path(next(iter(spec.submodule_search_locations)))
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(package / "litellm_core_utils" / "tokenizers"))
    import tiktoken

    encoding = tiktoken.get_encoding("o200k_base")
    return lambda text: len(encoding.encode_ordinary(text))


def paragraphs(*paths: Path) -> list[str]:
    return [p for path in paths for p in path.read_text().split("\n\n") if p.strip()]


def corpora() -> dict[str, list[str]]:
    """Name -> texts."""
    out = {}
    for path in sorted((ROOT / "tests" / "data").glob("tool_results*.yaml")):
        entries = yaml.safe_load(path.read_text())
        out[path.name] = [e["content"] for e in entries if e.get("content")]
    out["README + docs (paragraphs)"] = paragraphs(ROOT / "README.md", ROOT / "docs/adoption.md")
    out["rules/*.yaml (paragraphs)"] = paragraphs(*sorted((ROOT / "rules").glob("*.yaml")))
    multilingual = (ROOT / "bench" / "tokens_multilingual.txt").read_text().splitlines()
    out["multilingual (lines)"] = [line for line in multilingual if line]
    out["synthetic (runs, hex, base64, JSON)"] = synthetic()
    return out


def synthetic() -> list[str]:
    """Shapes the corpora lack: long runs of one character, random hex and base64, JSON."""
    rng = random.Random(21)
    items = [{"id": i, "name": f"item{i}", "v": rng.random()} for i in range(50)]
    return [
        *(char * 1000 for char in "aA0.- \n"),
        ("=" * 80 + "\n") * 20,
        rng.randbytes(2000).hex(),
        base64.b64encode(rng.randbytes(3000)).decode(),
        "\n".join(str(uuid.UUID(bytes=rng.randbytes(16))) for _ in range(100)),
        json.dumps(items, separators=(",", ":")),
        json.dumps(items, indent=2),
    ]


def errors(estimate: Callable[[str], float], texts: list[str], truth: list[int]) -> list[str]:
    """Mean, 95th percentile and worst absolute relative error, the error of the sum, and the
    mean and worst error over the texts of 100 tokens or more."""
    guesses = [estimate(t) for t in texts]
    pairs = list(zip(guesses, truth, strict=True))
    rel = sorted(abs(g - n) / n for g, n in pairs)
    long = sorted(abs(g - n) / n for g, n in pairs if n >= LONG)
    p95 = rel[min(len(rel) - 1, round(0.95 * (len(rel) - 1)))]
    total = sum(guesses) / sum(truth) - 1
    cells = [f"{f:.1%}" for f in (statistics.mean(rel), p95, rel[-1])]
    cells += [f"{statistics.mean(long):.1%}", f"{long[-1]:.1%}"] if long else ["-", "-"]
    return [*cells, f"{total:+.1%}"]


def quarter(text: str) -> int:
    """The 4-characters-per-token rule, as the proxy used it before the tokenizer loaded."""
    return len(text) // tokens.CHARS_PER_TOKEN + 1


def table(data: dict[str, tuple[list[str], list[int]]]) -> None:
    print("Absolute relative error per text: mean, p95, worst; then mean and worst over the")
    print(f"texts of {LONG} tokens or more; and the error of the corpus's total.\n")
    for name, guess in (("chars/4", quarter), ("estimate", tokens.count.__wrapped__)):
        print(f"{name}:\n")
        print(f"| corpus | texts | tokens | mean | p95 | worst | >= {LONG}: mean | worst | total |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for corpus, (texts, truth) in data.items():
            cells = " | ".join(errors(guess, texts, truth))
            print(f"| {corpus} | {len(texts)} | {sum(truth):,} | {cells} |")
        print()


def speed(count: Callable[[str], int]) -> None:
    """Milliseconds per MB of tool output, estimate vs tiktoken."""
    text = "".join(corpora()["tool_results.yaml"])
    text = (text * (1_000_000 // len(text) + 1))[:1_000_000]
    for name, function in (("estimate", tokens.count.__wrapped__), ("tiktoken", count)):
        start = time.perf_counter()
        function(text)
        print(f"{name}: {(time.perf_counter() - start) * 1000:.0f} ms per MB")


def fit(texts: list[str], truth: list[int]) -> list[float]:
    """Weights minimising the squared relative error (normal equations, Gaussian elimination);
    the last `FIXED` weights stay as they are."""
    fixed = [w for w, _ in tokens.FEATURES[-FIXED:]]
    rows, targets, scales = [], [], []
    for text, n in zip(texts, truth, strict=True):
        counts = tokens.features(text)
        rows.append(counts[:-FIXED])
        targets.append(n - sum(w * c for w, c in zip(fixed, counts[-FIXED:], strict=True)))
        scales.append(1 / n**2)
    k = len(rows[0])
    matrix = [
        [sum(s * r[i] * r[j] for r, s in zip(rows, scales, strict=True)) for j in range(k)]
        + [sum(s * r[i] * y for r, y, s in zip(rows, targets, scales, strict=True))]
        for i in range(k)
    ]
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(matrix[r][col]))
        matrix[col], matrix[pivot] = matrix[pivot], matrix[col]
        for r in range(k):
            if r != col:
                factor = matrix[r][col] / matrix[col][col]
                matrix[r] = [a - factor * b for a, b in zip(matrix[r], matrix[col], strict=True)]
    return [matrix[i][k] / matrix[i][i] for i in range(k)] + fixed


def main() -> None:
    count = encoder()
    data = {name: (texts, [count(t) for t in texts]) for name, texts in corpora().items()}
    if "--fit" in sys.argv[1:]:
        weights = fit(*data["tool_results.yaml"])
        print("weights for tokens.FEATURES:", ", ".join(f"{w:.3f}" for w in weights))
        return
    table(data)
    speed(count)


if __name__ == "__main__":
    main()
