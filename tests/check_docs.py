#!/usr/bin/env python3
"""Checks that the documentation's references resolve, so that a rename or a result that
was never committed shows up in CI rather than in a reader's search:

* every quoted benchmark result (`...-name-vNN.txt`, the notes' short form of
  `bench/results/<date>-<card>-name-vNN.txt`) names a file under bench/results;
* every repository path in backquotes (`src/cuda/policy.cu`, `bench/geqrf_outer_sweep`, the
  latter a client named by its target) exists;
* the README's performance table agrees with the suite JSON it cites (every time, range,
  ratio and the geometric mean, to the digits shown), so that a number there is one that
  was measured;
* every code name in backquotes in docs/policy.md (constants `kName`, functions and fields
  with an underscore, `Type::member`) occurs in src/ or include/ (or, for the tuning
  clients' names, bench/ and tools/): the policy document must describe the code as it is. The performance notes are history and may name code that is
  gone, so only their results and paths are checked.

Usage: check_docs.py [repository root]   (exit status 1 and one line per broken reference)
"""
import json
import math
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[1])
DOCS = ["README.md", "docs/policy.md", "docs/perf-notes.md", "python/README.md"]
CODE_CHECKED = ["docs/policy.md"]
TOP_DIRS = "src|docs|bench|scripts|tests|tools|python|check|include|examples|cmake"

CITE = re.compile(r"`\.\.\.-([A-Za-z0-9_.\-]+)`")
PATH = re.compile(r"`((?:%s)/[A-Za-z0-9_./\-]+)`" % TOP_DIRS)
QUOTED = re.compile(r"`([^`\n]+)`")
IDENTIFIER = re.compile(r"^(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*$")  # `name` or `Type::member`


def source_text():
    """The library's sources and the clients' (bench/, tools/)."""
    parts = []
    for top in ("src", "include", "bench", "tools"):
        for f in sorted((ROOT / top).rglob("*")):
            if f.suffix in (".cu", ".cuh", ".hpp", ".cpp", ".h"):
                parts.append(f.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def path_exists(p):
    p = p.rstrip("/.,")
    if (ROOT / p).exists():
        return True
    # A client named by its build target: bench/geqrf_outer_sweep is bench/geqrf_outer_sweep.cu.
    parent, name = (ROOT / p).parent, (ROOT / p).name
    return parent.is_dir() and any(c.stem == name for c in parent.iterdir())


def shown(text, value):
    """Whether `value` rounds to the number written as `text` (to its digits)."""
    digits = len(text.split(".")[1]) if "." in text else 0
    return abs(value - float(text)) <= 0.5 * 10.0**-digits * (1 + 1e-9)


def shown_range(text, values):
    """`text` is "a" (every value rounds to it) or "a-b" (the least and the greatest)."""
    lo, _, hi = text.partition("-")
    hi = hi or lo
    return shown(lo, min(values)) and shown(hi, max(values))


def check_readme_table(errors):
    """The README's suite table against the JSON named just above it."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("## Performance"))
    src = next(re.search(r"`(bench/results/[^`]+\.json)`", l) for l in lines[start:] if "bench/results/" in l)
    suite = json.loads((ROOT / src.group(1)).read_text())
    rows = 0
    for lineno, line in enumerate(lines[start:], start + 1):
        if not line.startswith("| ") or line.startswith("| case") or line.startswith("| ---"):
            if rows and not line.startswith("|"):
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows += 1
        where = f"README.md:{lineno}"
        if cells[0] == "geometric mean":
            if not shown(cells[1].strip("*"), suite["geomean_ms"]):
                errors.append(f"{where}: geometric mean {cells[1]} is not the JSON's {suite['geomean_ms']}")
            continue
        m = re.match(r"(\d+)x(\d+)", cells[0])
        if m is None or len(cells) < 4:
            errors.append(f"{where}: a row that names no batch x n case: '{cells[0]}'")
            continue
        cases = [c for c in suite["cases"] if c["batch"] == int(m.group(1)) and c["n"] == int(m.group(2))]
        if not cases:
            errors.append(f"{where}: no case {cells[0]} in {src.group(1)}")
            continue
        ours = [c["ms_median"] for c in cases]
        if not shown_range(cells[1], ours):
            errors.append(f"{where}: batchqr {cells[1]} is not {min(ours)}-{max(ours)}")
        for cell, name in ((cells[2], "cusolver"), (cells[3], "cublas")):
            b = re.match(r"([\d.]+(?:-[\d.]+)?) \(([\d.]+(?:-[\d.]+)?)x\)$", cell)
            runs = [next(x for x in c["baselines"] if x["name"] == name) for c in cases]
            if b is None:
                if any(r["ran"] for r in runs) or not cell.startswith("not timed"):
                    errors.append(f"{where}: {name} cell '{cell}' does not give the JSON's times")
                continue
            times = [r["ms_median"] for r in runs]
            ratios = [r["ms_median"] / c["ms_median"] for r, c in zip(runs, cases)]
            if not all(r["ran"] for r in runs) or not shown_range(b.group(1), times) or not shown_range(b.group(2), ratios):
                errors.append(f"{where}: {name} '{cell}' is not {min(times)}-{max(times)} "
                              f"({min(ratios):.3g}-{max(ratios):.3g}x)")
    if rows == 0:
        errors.append("README.md: no performance table found")


def main():
    results = [f.name for f in (ROOT / "bench" / "results").iterdir()]
    src = source_text()
    errors = []
    for doc in DOCS:
        text = (ROOT / doc).read_text(encoding="utf-8")
        for lineno, line in enumerate(text.splitlines(), 1):
            for cite in CITE.findall(line):
                if not any(r.endswith("-" + cite) for r in results):
                    errors.append(f"{doc}:{lineno}: result `...-{cite}` is not under bench/results")
            for p in PATH.findall(line):
                if not path_exists(p):
                    errors.append(f"{doc}:{lineno}: path `{p}` does not exist")
            if doc not in CODE_CHECKED:
                continue
            for q in QUOTED.findall(line):
                if not IDENTIFIER.match(q):
                    continue
                name = q.split("::")[-1]
                is_code = "::" in q or name.startswith("k") and name[1:2].isupper() or "_" in name
                if is_code and not re.search(r"\b" + re.escape(name) + r"\b", src):
                    errors.append(f"{doc}:{lineno}: `{q}` does not occur in src/, include/, bench/ or tools/")
    check_readme_table(errors)
    for e in errors:
        print(e)
    print(f"check_docs: {len(DOCS)} documents, {len(errors)} broken reference(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
