#!/usr/bin/env python3
"""Sum ncu's gpu__time_duration per kernel name: ncu --csv ... | ncu-summary.py [label]."""
import csv
import re
import sys
from collections import defaultdict

label = sys.argv[1] if len(sys.argv) > 1 else ""
total = defaultdict(float)
count = defaultdict(int)
lines = [l for l in sys.stdin if l.startswith('"')]
for row in csv.DictReader(lines):
    if row.get("Metric Name") != "gpu__time_duration.sum":
        continue
    name = re.sub(r"\(.*", "", row["Kernel Name"])  # drop argument lists
    name = re.sub(r"<.*", lambda m: m.group(0)[:40], name)
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}.get(row["Metric Unit"], 1e-6)
    total[name] += float(row["Metric Value"].replace(",", "")) * scale
    count[name] += 1
grand = sum(total.values())
print(f"-- {label}: {grand:.3f} ms in {sum(count.values())} kernels")
for name, t in sorted(total.items(), key=lambda kv: -kv[1]):
    print(f"   {t:9.3f} ms {100 * t / grand:5.1f}% {count[name]:6d}x  {name}")
