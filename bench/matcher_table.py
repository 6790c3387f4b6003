#!/usr/bin/env python3
"""Turns matcher_bench's JSON (--benchmark_out=FILE --benchmark_out_format=json) into the
tables of bench/RESULTS.md's "## matcher" section, with ratios to plain counting.

usage: bench/matcher_table.py run.json
"""
import json
import re
import sys

runs = json.load(open(sys.argv[1]))["benchmarks"]
match = {}
other = {}
for b in runs:
    m = re.match(r"match/(\w+)/subs:(\d+)/words:(\d+)", b["name"])
    if m:
        match[(m.group(1), int(m.group(2)), int(m.group(3)))] = b
    else:
        other[b["name"]] = b


def us(x):
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


print("| subs | words | index median / p99 us | plain counting median / p99 us | counting / index (median) | naive median us | postings (counting) | candidates (index) | matches |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (kind, n, words), b in sorted(match.items(), key=lambda kv: (kv[0][1], kv[0][2])):
    if kind != "index":
        continue
    c = match.get(("counting", n, words))
    nv = match.get(("naive", n, words))
    row = [f"{n:,}", str(words), f"{us(b['median_us'])} / {us(b['p99_us'])}"]
    row.append(f"{us(c['median_us'])} / {us(c['p99_us'])}" if c else "-")
    row.append(f"{c['median_us'] / b['median_us']:.0f}x" if c else "-")
    row.append(us(nv["median_us"]) if nv else "-")
    row.append(f"{c['postings']:,.0f}" if c else "-")
    row.append(f"{b['candidates']:,.0f}")
    row.append(f"{b['matches']:,.0f}")
    print("| " + " | ".join(row) + " |")

print()
print("| subs | index bytes/sub (after maintenance) | right after bulk insert | plain counting bytes/sub | bulk insert s | full maintenance pass s |")
print("| --- | --- | --- | --- | --- | --- |")
for (kind, n, words), b in sorted(match.items(), key=lambda kv: kv[0][1]):
    if kind != "index" or words != 61:
        continue
    c = match.get(("counting", n, words))
    print(f"| {n:,} | {b['B_per_sub']:.1f} | {b.get('B_per_sub_built', 0):.1f} | {c['B_per_sub']:.1f} | {b['build_s']:.2f} | {b.get('maintain_pass_s', 0):.2f} |")

print()
for name, b in other.items():
    fields = {k: v for k, v in b.items() if k.endswith("_us") or k in ("items_per_second", "bytes_per_second")}
    label = b.get("label", "")
    print(f"- {name} {label}: " + ", ".join(f"{k}={v:,.3g}" for k, v in fields.items()))
