#!/usr/bin/env bash
# The crawler's throughput (issue 10): changed feeds per CPU-second through fetch, parse,
# dedup, tokenise, the store's durable write and sequencing, and the broadcast to the
# shard (which matches against SUBS subscriptions), as a ratio to the bare HTTP client's
# fetches per CPU-second against the same server in the same run.
#
#   bench/crawler_throughput.sh [FEEDPLANE [HTTP_CLIENT_BENCH]]
#     (defaults build/dataplane/feedplane and build/bench/http_client_bench)
#   environment, with defaults:
#     FEEDS=10000      feeds in the farm
#     CHANGE=0.1       share of fetches that find their feed changed (--change-share)
#     DURATION=20      seconds measured per run
#     RUNS=5           runs of each, interleaved: feedplane, bare client, feedplane, ...
#     WARMUP=3         seconds after the first full crawl before a run's window opens
#     SUBS=1000        subscriptions (bulk API; 1-3 words of ranks 30-5000, as scripts/demo)
#     MAX_IN_FLIGHT=1024 fetches in flight ([crawler] max_in_flight; the peer's cap)
#     FEED_BYTES=8192  document size (--feed-bytes)
#     ADDRESSES=16     loopback addresses the farm's hosts spread over (--addresses)
#     EXTRA_FEED_SHARE=0.05 share of feeds on a host that already has one (the farm's
#                      --extra-feed-share): at the default nearly every feed has its own
#                      host, so nearly every fetch opens a connection, as crawling the small
#                      web at long intervals does; 0.99 puts them on ~1% as many hosts, and
#                      connections are kept (both clients pay the same either way)
#     FARM_CPUS, FP_CPUS  taskset lists (default: the farm on the last allowed CPU,
#                      feedplane and the peer on the others); NO_PIN=1: serve --no-pin
#     GROUP_COMMIT_US  [server] group_commit_us (unset: the product's default)
#     OUT=DIR          keep the files (logs, samples, runs.tsv) in DIR
#
# The server is one `feedplane farm` for the whole run: FEEDS documents of about
# FEED_BYTES, each host name pinned to loopback (--resolve-file), every feed with an ETag
# and Last-Modified; each request of a feed first changes it (a new entry, a new ETag, so
# 200 with a new document) with probability CHANGE, else a conditional GET gets 304.
#
# feedplane: `serve --shards 1` (its shard pinned to the first CPU of FP_CPUS), a fresh
# data directory per run, the farm's OPML imported, [crawler] min_interval_s =
# max_interval_s = 1 (the floor config allows), per_domain_rate = 0 (no rate cap),
# per_domain_connections = 1024. A feed is fetched again a second after its last fetch
# finished, so the offered load is about FEEDS fetches/s: with more feeds than the crawler
# fetches in a second it runs flat out (the "shard-0 busy" figure says how near). The
# window opens WARMUP seconds after every source was fetched once (the first crawl parses
# every document in full; it is not counted).
# Counted over the window: fetches by result (/metrics), articles handed to the store and
# sequenced, and the process's CPU time, every thread (/proc/PID/stat utime + stime), also
# broken down by thread name.
#
# The peer: http_client_bench --crawl, the same net::http_client with serve's loop and
# client options, fetching the same URLs the same way (each again a second after its last
# fetch finished, conditionally, at most MAX_IN_FLIGHT at once), parsing nothing, against
# the same farm, counted over the same kind of window. The farm changes feeds for it at the
# same rate.
#
# Printed: one line per run, then the medians and ranges over the runs: changed feeds and
# all feeds per feedplane CPU-second, the bare client's fetches per CPU-second, and the
# ratio feedplane / bare client of fetches per CPU-second, each run against its neighbour
# (goals: >= 20,000 changed feeds per CPU-second, >= 0.7x). Changed feeds per CPU-second
# count the CPU the unchanged fetches took too: CHANGE=1 (every fetch brings a changed
# feed) is the first goal's figure; the ratio's goal holds at Cobra's mix, where most
# fetches find nothing new (DESIGN.md 9, "Crawling"), so run CHANGE=0.1 as well. The last
# line is
#   result changed_per_cpu_s=X feeds_per_cpu_s=X peer_per_cpu_s=X ratio=X
# with the medians. It needs an otherwise idle machine: the farm, feedplane and the peer
# share it, and anything else running shifts the figures.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$src/build/dataplane/feedplane}
peer=${2:-$src/build/bench/http_client_bench}
feeds=${FEEDS:-10000}
change=${CHANGE:-0.1}
duration=${DURATION:-20}
runs=${RUNS:-5}
warmup=${WARMUP:-3}
subs=${SUBS:-1000}
in_flight=${MAX_IN_FLIGHT:-1024}
feed_bytes=${FEED_BYTES:-8192}
addresses=${ADDRESSES:-16}
[ -x "$bin" ] || { echo "no feedplane binary at $bin (scripts/build release)" >&2; exit 2; }
[ -x "$peer" ] || { echo "no http_client_bench at $peer (scripts/build release)" >&2; exit 2; }
tmp=${OUT:-$(mktemp -d)}
mkdir -p "$tmp"
farm_pid="" pid=""
cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  [ -n "$farm_pid" ] && { kill "$farm_pid" 2>/dev/null || true; wait "$farm_pid" 2>/dev/null || true; }
  if [ -z "${OUT:-}" ]; then rm -rf "$tmp"; else rm -rf "$tmp"/data.*; fi
}
trap cleanup EXIT
fail() { echo "crawler_throughput: $*" >&2; exit 1; }

# CPUs: the farm on the last allowed one, feedplane and the peer on the rest.
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
if [ -z "${FARM_CPUS+x}" ] && [ "${#cpus[@]}" -ge 2 ]; then
  FARM_CPUS=${cpus[-1]}
  FP_CPUS=$(IFS=,; echo "${cpus[*]:0:${#cpus[@]}-1}")
fi
farm_cpus=${FARM_CPUS:-} fp_cpus=${FP_CPUS:-}
on() {  # on CPULIST COMMAND...: runs COMMAND under taskset (none when the list is empty)
  local list=$1
  shift
  if [ -n "$list" ]; then exec taskset -c "$list" "$@"; else exec "$@"; fi
}

# A helper for the arithmetic: samples of a process's CPU (total and by thread name),
# the figures of a run, the summary.
cat >"$tmp/helper.py" <<'PY'
import json, os, statistics, sys, time, urllib.request

def cpu(pid):
    hz = os.sysconf("SC_CLK_TCK")
    def fields(path):
        s = open(path).read()
        return s[s.index("(") + 1:s.rindex(")")], s[s.rindex(")") + 2:].split()
    _, f = fields(f"/proc/{pid}/stat")
    total = (int(f[11]) + int(f[12])) / hz
    threads = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            name, tf = fields(f"/proc/{pid}/task/{t}/stat")
        except OSError:
            continue  # the thread ended meanwhile
        threads[name] = threads.get(name, 0) + (int(tf[11]) + int(tf[12])) / hz
    return total, threads

def metrics(url):
    out = {}
    for line in urllib.request.urlopen(url, timeout=10).read().decode().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out

def sample(pid, farm_pid, url, path):
    s = {"wall": time.monotonic()}
    s["cpu"], s["threads"] = cpu(pid)
    s["farm_cpu"], _ = cpu(farm_pid)
    if url:
        s["metrics"] = metrics(url)
    json.dump(s, open(path, "w"))

def fmt(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.2f}"

def feedplane_run(run, a, b, tsv):
    a, b = json.load(open(a)), json.load(open(b))
    wall = b["wall"] - a["wall"]
    d = lambda k: b["metrics"].get(k, 0) - a["metrics"].get(k, 0)
    res = lambda r: d(f'feedplane_crawler_fetches_total{{result="{r}"}}')
    fetches = sum(res(r) for r in ("new_entries", "no_new_entries", "not_modified", "unchanged", "error"))
    changed, errors = res("new_entries"), res("error")
    cpu = b["cpu"] - a["cpu"]
    farm = (b["farm_cpu"] - a["farm_cpu"]) / wall
    articles, sequenced = d("feedplane_crawler_articles_total"), d("feedplane_store_articles_sequenced_total")
    matched = d("feedplane_reflector_articles_matched_total")
    threads = {k: (v - a["threads"].get(k, 0)) / wall for k, v in b["threads"].items()}
    busy = ", ".join(f"{k} {v:.2f}" for k, v in sorted(threads.items(), key=lambda kv: -kv[1]) if v >= 0.01)
    per_cpu = fetches / cpu if cpu > 0 else 0
    changed_per_cpu = changed / cpu if cpu > 0 else 0
    print(f"run {run} feedplane:   {fmt(fetches / wall)} fetches/s ({fmt(changed / wall)} changed, "
          f"{fmt(res('not_modified') / wall)} 304, {fmt((res('unchanged') + res('no_new_entries')) / wall)} "
          f"200 nothing new, {fmt(errors / wall)} errors); articles {fmt(articles / wall)}/s, sequenced "
          f"{fmt(sequenced / wall)}/s, matched on the shard {fmt(matched / wall)}/s")
    print(f"      CPU {cpu / wall:.2f} s/s (by thread: {busy}); {fmt(per_cpu)} feeds and "
          f"{fmt(changed_per_cpu)} changed feeds per CPU-second; the farm {farm:.2f} CPU-s/s")
    # The figures mean something only if the pipeline did its work: say so when not.
    if errors > 0.01 * fetches:
        print(f"      WARNING: {errors:.0f} of {fetches:.0f} fetches failed (serve.{run}.log, farm.log)")
    cap = float(os.environ.get("IN_FLIGHT_CAP", "0"))
    if cap > 0 and b["metrics"].get("feedplane_crawler_fetches_in_flight", 0) >= 0.9 * cap:
        print(f"      WARNING: fetches in flight at the cap ({cap:.0f}) when the window closed: the "
              f"cap, not the CPU, may bound the rate (MAX_IN_FLIGHT, or a busy machine)")
    if articles < 0.95 * changed or sequenced < 0.95 * articles:
        print(f"      WARNING: {changed:.0f} changed feeds, {articles:.0f} articles to the store, "
              f"{sequenced:.0f} sequenced: articles are not keeping up")
    with open(tsv, "a") as out:
        out.write(f"{run}\tfeedplane\t{wall:.3f}\t{fetches:.0f}\t{changed:.0f}\t{errors:.0f}\t{cpu:.3f}"
                  f"\t{articles:.0f}\t{sequenced:.0f}\t{threads.get('shard-0', 0):.3f}\n")

def peer_run(run, line, a, b, tsv):
    kv = dict(f.split("=", 1) for f in line.split()[1:])
    a, b = json.load(open(a)), json.load(open(b))
    wall, cpu = float(kv["wall_s"]), float(kv["cpu_s"])
    fetches, changed, errors = (float(kv[k]) for k in ("fetches", "changed", "errors"))
    farm = (b["farm_cpu"] - a["farm_cpu"]) / (b["wall"] - a["wall"])
    print(f"run {run} bare client: {fmt(fetches / wall)} fetches/s ({fmt(changed / wall)} changed, "
          f"{fmt(float(kv['not_modified']) / wall)} 304, {fmt(errors / wall)} errors; "
          f"{100 * float(kv['new_connections']) / max(fetches, 1):.0f}% on a new connection); CPU {cpu / wall:.2f} s/s; "
          f"{fmt(fetches / cpu if cpu > 0 else 0)} fetches per CPU-second; the farm {farm:.2f} CPU-s/s "
          f"(over the whole run)")
    with open(tsv, "a") as out:
        out.write(f"{run}\tpeer\t{wall:.3f}\t{fetches:.0f}\t{changed:.0f}\t{errors:.0f}\t{cpu:.3f}\t0\t0\t0\n")

def summary(tsv):
    rows = [l.rstrip("\n").split("\t") for l in open(tsv)]
    fp = {int(r[0]): r for r in rows if r[1] == "feedplane"}
    pe = {int(r[0]): r for r in rows if r[1] == "peer"}
    per = lambda r, i: float(r[i]) / float(r[6]) if float(r[6]) > 0 else 0.0
    changed = [per(r, 4) for r in fp.values()]
    feeds = [per(r, 3) for r in fp.values()]
    peer = [per(r, 3) for r in pe.values()]
    ratio = [per(fp[k], 3) / per(pe[k], 3) for k in sorted(fp) if k in pe and per(pe[k], 3) > 0]
    busy = [float(r[9]) for r in fp.values()]
    def line(label, v, goal=""):
        if not v:
            print(f"{label}: no runs")
            return
        print(f"{label}: median {fmt(statistics.median(v))} (range {fmt(min(v))} .. {fmt(max(v))}){goal}")
    print(f"summary over {len(fp)} feedplane and {len(pe)} bare-client runs:")
    line("  feedplane changed feeds per CPU-second", changed, "   goal >= 20,000")
    line("  feedplane feeds per CPU-second", feeds)
    line("  bare client fetches per CPU-second", peer)
    line("  ratio feedplane / bare client, feeds per CPU-second", ratio, "   goal >= 0.7")
    line("  feedplane shard-0 busy (CPU-s/s; near 1: it ran flat out)", busy)
    m = lambda v: statistics.median(v) if v else 0
    print(f"result changed_per_cpu_s={m(changed):.0f} feeds_per_cpu_s={m(feeds):.0f} "
          f"peer_per_cpu_s={m(peer):.0f} ratio={m(ratio):.3f}")

cmd = sys.argv[1]
if cmd == "sample":
    sample(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
elif cmd == "feedplane-run":
    feedplane_run(*sys.argv[2:6])
elif cmd == "peer-run":
    peer_run(*sys.argv[2:7])
elif cmd == "summary":
    summary(sys.argv[2])
PY
helper() { python3 "$tmp/helper.py" "$@"; }

echo "crawler throughput: FEEDS=$feeds CHANGE=$change FEED_BYTES=$feed_bytes DURATION=$duration" \
  "RUNS=$runs WARMUP=$warmup SUBS=$subs MAX_IN_FLIGHT=$in_flight; farm on CPUs '${farm_cpus:-any}'," \
  "feedplane and the bare client on '${fp_cpus:-any}'"

# ---- the farm, for the whole run ----
: >"$tmp/farm.out"
(on "$farm_cpus" "$bin" farm --feeds "$feeds" --seed "${SEED:-1}" --listen 127.0.0.1:0 --start-paused \
  --change-share "$change" --feed-bytes "$feed_bytes" --addresses "$addresses" \
  --extra-feed-share "${EXTRA_FEED_SHARE:-0.05}" \
  --opml "$tmp/feeds.opml" --pins "$tmp/pins.txt") >"$tmp/farm.out" 2>"$tmp/farm.log" &
farm_pid=$!
until grep -q '^farm: listening' "$tmp/farm.out"; do
  kill -0 "$farm_pid" 2>/dev/null || { cat "$tmp/farm.log" >&2; fail "the farm exited"; }
  sleep 0.2
done
farm_url=$(sed -n 's|^farm: listening on \(http://[0-9.:]*\)$|\1|p' "$tmp/farm.out")

# ---- subscriptions (bulk) and the OPML in documents of 2,000 outlines (the body limit) ----
python3 - "$tmp/bulk.jsonl" "$subs" "$src/bench/workload/data/english_by_rank.txt" <<'PY'
import json, random, sys
random.seed(7)
words = [w.strip() for w in open(sys.argv[3])][29:5000]
with open(sys.argv[1], "w") as out:
    for i in range(int(sys.argv[2])):
        q = " ".join(random.sample(words, random.choice([1, 1, 2, 2, 3])))
        out.write(json.dumps({"account": f"bench-{i // 100}", "query": q, "backfill": False}) + "\n")
PY
grep '<outline' "$tmp/feeds.opml" | split -l 2000 - "$tmp/opml."
for f in "$tmp"/opml.??; do
  { echo '<?xml version="1.0"?><opml version="2.0"><body>'; cat "$f"; echo '</body></opml>'; } >"$f.xml"
  rm "$f"
done
cat >"$tmp/feedplane.toml" <<TOML
[crawler]
min_interval_s = 1
max_interval_s = 1
per_domain_rate = 0
per_domain_connections = 1024
max_in_flight = $in_flight
TOML
if [ -n "${GROUP_COMMIT_US:-}" ]; then
  printf '[server]\ngroup_commit_us = %s\n' "$GROUP_COMMIT_US" >>"$tmp/feedplane.toml"
fi
export FEEDPLANE_ADMIN_TOKEN=crawler-throughput-bench
auth="Authorization: Bearer $FEEDPLANE_ADMIN_TOKEN"
metric() {  # metric NAME: the sum of its series
  curl -s "$base/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d\n", s + 0 }'
}

feedplane_run() {
  local run=$1 data="$tmp/data.$1" pin=() port="" t0
  [ "${NO_PIN:-0}" = 1 ] && pin=(--no-pin)
  (on "$fp_cpus" "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 --data "$data" \
    --shards 1 "${pin[@]}" --resolve-file "$tmp/pins.txt") >"$tmp/serve.$run.log" 2>&1 &
  pid=$!
  until [ -n "$port" ]; do
    kill -0 "$pid" 2>/dev/null || { tail "$tmp/serve.$run.log" >&2; fail "serve exited"; }
    sleep 0.2
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.$run.log" 2>/dev/null | head -1 | cut -d: -f3 || true)
  done
  base="http://127.0.0.1:$port"
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ]; do sleep 0.2; done
  if [ "$subs" -gt 0 ]; then
    local made
    made=$(curl -sf -H "$auth" --data-binary @"$tmp/bulk.jsonl" "$base/api/subscriptions:bulk" | grep -c '"feed"' || true)
    [ "$made" = "$subs" ] || fail "bulk API made $made of $subs subscriptions"
  fi
  for f in "$tmp"/opml.*.xml; do
    local code
    code=$(curl -s -o "$tmp/import.out" -w '%{http_code}' -H "$auth" -H 'Content-Type: text/x-opml' \
      --data-binary @"$f" "$base/api/sources:import")
    [ "$code" = 200 ] || [ "$code" = 201 ] || fail "import: $code $(cat "$tmp/import.out")"
  done
  t0=$SECONDS
  until [ "$(metric feedplane_crawler_fetches_total)" -ge "$feeds" ]; do
    [ $((SECONDS - t0)) -lt $((120 + feeds / 100)) ] || fail "the first crawl did not finish"
    kill -0 "$pid" 2>/dev/null || fail "serve exited"
    sleep 0.5
  done
  sleep "$warmup"
  helper sample "$pid" "$farm_pid" "$base/metrics" "$tmp/fp.$run.a.json"
  sleep "$duration"
  helper sample "$pid" "$farm_pid" "$base/metrics" "$tmp/fp.$run.b.json"
  IN_FLIGHT_CAP=$in_flight helper feedplane-run "$run" "$tmp/fp.$run.a.json" "$tmp/fp.$run.b.json" "$tmp/runs.tsv"
  kill "$pid"
  wait "$pid" || true
  pid=""
  rm -rf "$data"
}

peer_run() {
  local run=$1 line
  helper sample "$farm_pid" "$farm_pid" "" "$tmp/peer.$run.a.json"
  (on "$fp_cpus" "$peer" --crawl="$tmp/feeds.opml" --resolve-file="$tmp/pins.txt" \
    --seconds="$duration" --warmup-seconds="$warmup" --max-in-flight="$in_flight") \
    >"$tmp/peer.$run.out" 2>"$tmp/peer.$run.log" || { cat "$tmp/peer.$run.log" >&2; fail "the bare client failed"; }
  helper sample "$farm_pid" "$farm_pid" "" "$tmp/peer.$run.b.json"
  line=$(grep '^crawl_peer ' "$tmp/peer.$run.out") || fail "no figures from the bare client"
  helper peer-run "$run" "$line" "$tmp/peer.$run.a.json" "$tmp/peer.$run.b.json" "$tmp/runs.tsv"
}

: >"$tmp/runs.tsv"
for run in $(seq 1 "$runs"); do
  feedplane_run "$run"
  peer_run "$run"
done
echo "the farm: $(curl -s "$farm_url/_farm/stats")"
helper summary "$tmp/runs.tsv"
