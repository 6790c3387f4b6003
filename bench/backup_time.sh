#!/usr/bin/env bash
# bench/backup_time.sh BIN DIR [RUNS]: the online backup (POST /api/backups) against its
# peer, an offline copy of the stopped data directory (`cp -a`, what an operator without
# the route does), on a load run's output directory DIR (its data/, feedplane.toml and
# pins.txt, as `feedplane load --out DIR` leaves them). Each of RUNS rounds (default 5):
# start `BIN serve` on DIR/data, wait for /readyz, take a backup and time it (the backup's
# own started/finished and the client's wall clock from the POST to "complete"), stop
# serve, then time `cp -a` of DIR/data (backups left out) into a fresh directory; both on
# the same file system, alternated. Prints one line per round and the medians, and the
# disk space each takes beyond the data (du counts a hard-linked file once per call).
# Backups and copies are removed after each round. Needs an otherwise idle machine.
set -euo pipefail
bin=$1
dir=$2
runs=${3:-5}
admin=backup-bench
log=$(mktemp /tmp/fp-backup.XXXXXX)
scratch=$(mktemp -d "$dir/backup-bench.XXXXXX")
pid=""
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$log" "$scratch" "$dir/data/backups"
}
trap cleanup EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
: >"$scratch/online" && : >"$scratch/copy"
for r in $(seq "$runs"); do
  FEEDPLANE_ADMIN_TOKEN=$admin "$bin" serve --listen 127.0.0.1:0 --data "$dir/data" \
    --config "$dir/feedplane.toml" --resolve-file "$dir/pins.txt" --no-pin >"$log" 2>&1 &
  pid=$!
  u=""
  for _ in $(seq 6000); do
    u=$(grep -o 'http://127.0.0.1:[0-9]*' "$log" | head -1 || true)
    [ -n "$u" ] && curl -sf -o /dev/null "$u/readyz" && break
    kill -0 "$pid" 2>/dev/null || { tail -5 "$log" >&2; exit 1; }
    sleep 0.1
  done
  sleep 2  # past the start: the first snapshot round and the crawler's first wave
  # One client process posts and polls every 5 ms: the wall clock from the POST until it
  # reads "complete", and the backup's own started..finished.
  read -r online own_s files bytes < <(python3 - "$u" "$admin" "bench-$r" <<'PY'
import http.client, json, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
h = {"Authorization": "Bearer " + sys.argv[2]}
c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
t0 = time.monotonic()
c.request("POST", "/api/backups", json.dumps({"name": sys.argv[3]}), h)
r = c.getresponse(); r.read()
assert r.status == 202, r.status
while True:
    c.request("GET", "/api/backups/" + sys.argv[3], headers=h)
    b = json.loads(c.getresponse().read())
    if b["state"] != "running":
        break
    time.sleep(0.005)
t1 = time.monotonic()
if b["state"] != "complete":
    sys.exit(f"backup {b}")
print(f"{t1 - t0:.3f} {(b['finished_ms'] - b['started_ms']) / 1000} {b['files']} {b['bytes']}")
PY
)
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  grep -o 'complete: .*' "$log" | sed 's/^/  serve: /' || true
  data_kb=$(du -sk --exclude=backups "$dir/data" | cut -f1)
  both_kb=$(du -sk "$dir/data" | cut -f1)
  online_extra_kb=$((both_kb - data_kb))
  rm -rf "$dir/data/backups"
  sync
  t2=$(now)
  cp -a "$dir/data" "$scratch/copy-$r"
  rm -rf "$scratch/copy-$r/backups"
  sync -f "$scratch/copy-$r"
  t3=$(now)
  copy_kb=$(du -sk "$scratch/copy-$r" | cut -f1)
  rm -rf "$scratch/copy-$r"
  copy=$(python3 -c "print(f'{$t3 - $t2:.3f}')")
  echo "$online" >>"$scratch/online"
  echo "$copy" >>"$scratch/copy"
  echo "round $r: online backup ${online} s (its own ${own_s} s; $files files, $bytes bytes," \
    "$((online_extra_kb / 1024)) MiB beyond the data on disk); cp -a of the stopped data ${copy} s" \
    "($((copy_kb / 1024)) MiB); data $((data_kb / 1024)) MiB"
done
m_on=$(median <"$scratch/online")
m_cp=$(median <"$scratch/copy")
echo "median: online backup $m_on s, cp -a $m_cp s, ratio cp/online $(python3 -c "print(f'{$m_cp / $m_on:.2f}')")x"
