#!/usr/bin/env python3
"""Checks that the documentation's references resolve, so that a rename or a result that
was never committed shows up in CI rather than in a reader's search:

* every quoted benchmark result (`...-name-vNN.txt`, the notes' short form of
  `bench/results/<date>-<card>-name-vNN.txt`) names a file under bench/results;
* every repository path in backquotes (`src/cuda/policy.cu`, `bench/geqrf_outer_sweep`, the
  latter a client named by its target) exists;
* every code name in backquotes in docs/policy.md (constants `kName`, functions and fields
  with an underscore, `Type::member`) occurs in src/ or include/: the policy table must
  describe the code as it is. The performance notes are history and may name code that is
  gone, so only their results and paths are checked.

Usage: check_docs.py [repository root]   (exit status 1 and one line per broken reference)
"""
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
CODE_NAME = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*::)*(k[A-Z][A-Za-z0-9_]*|[a-z][a-z0-9]*_[a-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*)$")


def source_text():
    parts = []
    for top in ("src", "include"):
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
                m = CODE_NAME.match(q)
                if not m:
                    continue
                name = q.split("::")[-1]
                is_code = "::" in q or name.startswith("k") and name[1:2].isupper() or "_" in name
                if is_code and not re.search(r"\b" + re.escape(name) + r"\b", src):
                    errors.append(f"{doc}:{lineno}: `{q}` does not occur in src/ or include/")
    for e in errors:
        print(e)
    print(f"check_docs: {len(DOCS)} documents, {len(errors)} broken reference(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
