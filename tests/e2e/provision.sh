#!/usr/bin/env bash
# `feedplane provision` end to end: dispatch to feedplane-provision, Figure 11 under the
# shipped Cobra model, byte-identical output, errors with file/line/key, an impossible
# workload, and the --json shape the README documents.
set -euo pipefail
bin=$1
src=$2
m=$src/provisioner/models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

grep -q provision <<<"$("$bin" --help)" || fail "--help does not list provision"
grep -q -- "--workload" <<<"$("$bin" provision --help)" || fail "provision --help"

nodes=$m/nodes/emulab-1x-100mbps-1024mb.toml
# Figure 11: crawlers/filters/reflectors from the greedy loop (row 2 differs: see
# provisioner/README.md).
for row in "fig11-1m-10m 1 28 28" "fig11-500k-20m 1 28 28" "fig11-250k-40m 1 28 28" "fig11-100k-1m 1 1 1"; do
  set -- $row
  "$bin" provision --workload "$m/workloads/$1.toml" --nodes "$nodes" --costs "$m/cobra.toml" --topology cobra --json \
    >"$tmp/$1.json" 2>"$tmp/$1.err" || fail "$1: exit $? ($(cat "$tmp/$1.err"))"
  got=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["greedy"]; print(" ".join(str(r["hosts"]) for r in p["roles"]))' "$tmp/$1.json")
  [ "$got" = "$2 $3 $4" ] || fail "$1: greedy $got, expected $2 $3 $4"
done

# Identical input, identical bytes (timings go to stderr).
args=(--workload "$m/workloads/fig2-800k-8m.toml" --nodes "$m/nodes/cobra-4x-25mbps-1024mb.toml" --costs "$m/cobra.toml" --topology cobra)
"$bin" provision "${args[@]}" >"$tmp/a.txt" 2>"$tmp/a.err"
"$bin" provision "${args[@]}" >"$tmp/b.txt" 2>/dev/null
cmp -s "$tmp/a.txt" "$tmp/b.txt" || fail "text output differs between identical runs"
grep -q "planned in" "$tmp/a.err" || fail "no timing on stderr"
grep -q "planned in" "$tmp/a.txt" && fail "timing on stdout"
grep -q "^hosts      bound 19   exact 19   greedy 19" "$tmp/a.txt" || fail "figure 2(a): $(head -5 "$tmp/a.txt")"
grep -q "reflector hosts 12: out-bw" "$tmp/a.txt" || fail "figure 2(a) reflectors not bound by out-bw"
"$bin" provision "${args[@]}" --json >"$tmp/a.json" 2>/dev/null
"$bin" provision "${args[@]}" --json >"$tmp/b.json" 2>/dev/null
cmp -s "$tmp/a.json" "$tmp/b.json" || fail "json output differs between identical runs"

# Bad input: every error names file, line and key; exit 2.
printf '[workload]\nname = "w"\nfeeds = 10\nsubscriptions = -5\nfedds = 3\n' >"$tmp/bad.toml"
set +e; "$bin" provision --workload "$tmp/bad.toml" --nodes "$nodes" --costs "$m/cobra.toml" >/dev/null 2>"$tmp/err"; st=$?; set -e
[ "$st" -eq 2 ] || fail "bad workload: exit $st"
grep -q "bad.toml:4: 'workload.subscriptions': must be between" "$tmp/err" || fail "bad value: $(cat "$tmp/err")"
grep -q "bad.toml:5: 'workload.fedds': unknown key" "$tmp/err" || fail "unknown key: $(cat "$tmp/err")"
set +e; "$bin" provision --workload "$tmp/missing.toml" --nodes "$nodes" --costs "$m/cobra.toml" >/dev/null 2>"$tmp/err"; st=$?; set -e
[ "$st" -eq 2 ] && grep -q "missing.toml: cannot open" "$tmp/err" || fail "missing file: exit $st $(cat "$tmp/err")"

# Impossible: a reflector hears every article; at 0.2 Mbps in, nothing can hold 1M feeds.
sed 's/^in_mbps = 100/in_mbps = 0.2/' "$nodes" >"$tmp/tiny.toml"
set +e; "$bin" provision --workload "$m/workloads/fig11-1m-10m.toml" --nodes "$tmp/tiny.toml" --costs "$m/cobra.toml" --topology cobra >"$tmp/out" 2>/dev/null; st=$?; set -e
[ "$st" -eq 1 ] || fail "impossible workload: exit $st"
grep -q "reflector in-bw .* cannot be resolved.*in_mbps >= " "$tmp/out" || fail "impossible: $(cat "$tmp/out")"

# feedplane's own topology (measured.toml is rewritten per machine by scripts/cost-model,
# so only wide margins are checked): Figure 11's 1M x 10M (plain HTTP) fits one project
# machine with no NATS; the moonshot (90% HTTPS) is planned whatever its count, with its
# binding limit named; 100M x 1B on 64-core hosts needs matching hosts and NATS servers.
"$bin" provision --workload "$m/workloads/fig11-1m-10m.toml" --nodes "$m/nodes/project-machine.toml" \
  --costs "$m/measured.toml" >"$tmp/one.txt" 2>/dev/null || fail "1M x 10M: exit $?"
grep -q "^hosts      bound 1   exact 1   greedy 1" "$tmp/one.txt" || fail "1M x 10M: $(cat "$tmp/one.txt")"
"$bin" provision --workload "$m/workloads/moonshot-1m-10m.toml" --nodes "$m/nodes/project-machine.toml" \
  --costs "$m/measured.toml" >"$tmp/moon.txt" 2>/dev/null || fail "moonshot: exit $?"
grep -Eq "^  crawl\+match hosts [0-9]+: cpu [0-9.]+ of 0.70" "$tmp/moon.txt" || fail "moonshot: $(cat "$tmp/moon.txt")"
"$bin" provision --workload "$m/workloads/large-100m-1b.toml" --nodes "$m/nodes/c64.toml" \
  --costs "$m/measured.toml" --json >"$tmp/large.json" 2>/dev/null || fail "100M x 1B: exit $?"
python3 - "$tmp/large.json" <<'PY' || fail "100M x 1B plan"
import json, sys
r = json.load(open(sys.argv[1]))
roles = {x["role"]: x for x in r["exact"]["roles"]}
assert r["topology"] == "feedplane" and r["exact"]["feasible"], r
assert "nats" in roles and roles["nats"]["hosts"] >= 3, roles
assert r["bound"]["price"] <= r["exact"]["price"] <= r["greedy"]["price"], r
PY
# --previous: planning again from a plan's own output moves nothing; more subscriptions
# add hosts and move only what the new hosts take.
"$bin" provision --workload "$m/workloads/large-100m-1b.toml" --nodes "$m/nodes/c64.toml" \
  --costs "$m/measured.toml" --previous "$tmp/large.json" >"$tmp/again.txt" 2>/dev/null || fail "--previous: exit $?"
grep -q "it still fits and is no dearer, so it is kept" "$tmp/again.txt" || fail "--previous: $(tail -5 "$tmp/again.txt")"
grep -q "partitions move" "$tmp/again.txt" && fail "--previous moved partitions: $(tail -5 "$tmp/again.txt")"
sed 's/^subscriptions = .*/subscriptions = 1_100_000_000/' "$m/workloads/large-100m-1b.toml" >"$tmp/grown.toml"
"$bin" provision --workload "$tmp/grown.toml" --nodes "$m/nodes/c64.toml" --costs "$m/measured.toml" \
  --previous "$tmp/large.json" >"$tmp/grown.txt" 2>/dev/null || fail "--previous grown: exit $?"
# (The host counts come from measured.toml, which scripts/cost-model rewrites per machine:
# checked as relations, not numbers.)
line=$(grep -E "^  crawl\+match +c64-256g [0-9]+ -> c64-256g [0-9]+ \(\+[0-9]+ -0\), [0-9]+ partitions move" "$tmp/grown.txt") ||
  fail "--previous grown: $(tail -5 "$tmp/grown.txt")"
[[ "$line" =~ c64-256g\ ([0-9]+)\ -\>\ c64-256g\ ([0-9]+)\ \(\+([0-9]+)\ -0\) ]] || fail "--previous grown: $line"
before=${BASH_REMATCH[1]} after=${BASH_REMATCH[2]} added=${BASH_REMATCH[3]}
[ "$after" -gt "$before" ] && [ "$added" -eq $((after - before)) ] ||
  fail "--previous grown: $before -> $after hosts, +$added: $line"

# Cobra's shipped model lacks feedplane's coefficients: the error names them.
set +e; "$bin" provision --workload "$m/workloads/moonshot-1m-10m.toml" --nodes "$m/nodes/c64.toml" --costs "$m/cobra.toml" >/dev/null 2>"$tmp/err"; st=$?; set -e
[ "$st" -eq 2 ] && grep -q "cobra.toml: 'coefficients.cpu_per_fetch_200': missing: the feedplane topology needs it" "$tmp/err" || fail "missing coefficient: exit $st $(cat "$tmp/err")"

# provision latency + map: a generated matrix, first-fit beside min-cost, the chosen
# mapping written out and checked against the capacity.
"$bin" provision latency --groups 200 --crawlers 8 --feeds 3000 --seed 4 >"$tmp/lat.csv"
"$bin" provision latency --groups 200 --crawlers 8 --feeds 3000 --seed 4 | cmp -s - "$tmp/lat.csv" || fail "latency not deterministic"
head -1 "$tmp/lat.csv" | grep -q "^group,feeds,rtt_ms_1,.*,rtt_ms_8$" || fail "latency header: $(head -1 "$tmp/lat.csv")"
"$bin" provision map --latency "$tmp/lat.csv" --crawlers 8 --output "$tmp/placed.csv" >"$tmp/map.txt" 2>"$tmp/map.err" || fail "map: exit $? $(cat "$tmp/map.err")"
grep -q "^first-fit " "$tmp/map.txt" && grep -q "^min-cost " "$tmp/map.txt" || fail "map output: $(cat "$tmp/map.txt")"
grep -q "min-cost .* ms" "$tmp/map.err" || fail "map timings not on stderr"
python3 - "$tmp/placed.csv" <<'PY' || fail "placed feeds"
import collections, sys
rows = open(sys.argv[1]).read().split("\n")[1:-1]
per = collections.Counter()
for r in rows:
    g, c, n = r.split(",")
    per[int(c)] += int(n)
assert sum(per.values()) == 3000, sum(per.values())
assert max(per.values()) <= 375, per
PY
set +e; "$bin" provision map --latency "$tmp/lat.csv" --crawlers 9 >/dev/null 2>"$tmp/err"; st=$?; set -e
[ "$st" -eq 2 ] && grep -q "has 8 RTT columns, not --crawlers 9" "$tmp/err" || fail "crawler count: $st $(cat "$tmp/err")"

# The README documents every top-level key of --json.
python3 - "$tmp/a.json" "$src/README.md" <<'PY' || fail "README's --json table out of step"
import json, re, sys
keys = set(json.load(open(sys.argv[1])))
readme = open(sys.argv[2]).read()
section = readme.split("## Provisioning", 1)[1].split("\n## ", 1)[0]
documented = set()
for row in re.findall(r"^\| (`[^|]*`) \|", section, re.M):
    documented |= set(re.findall(r"`([a-z_]+)`", row))
missing = keys - documented
if missing:
    sys.exit(f"undocumented keys: {sorted(missing)}")
PY
echo "provision e2e: ok"
