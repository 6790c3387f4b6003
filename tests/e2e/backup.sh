#!/usr/bin/env bash
# Online backups (POST/GET /api/backups, admin; dataplane/backup.h), end to end: a farm
# publishes, `feedplane serve --shards 2` crawls it, subscriptions match and a poller reads
# their feeds; a backup is taken while all of that goes on, more subscriptions are created
# after it, and then:
#   - a copy of the backup, started with `serve --data COPY --shards 3` (another shard
#     count), serves every subscription acknowledged before the backup with every item the
#     poller had seen before it, none twice, and none of those created after it; the
#     account's secret still works there;
#   - the original data directory still starts and holds everything (the backup's hard
#     links changed nothing in it);
#   - the API's errors: no admin token 401, a bad name 400, bad JSON 400, an unknown field
#     400, a name taken 409, an unknown backup 404;
#   - serve killed with SIGKILL right after a backup starts leaves either that backup
#     complete or nothing of it (no partial directory, no temporary one after a restart).
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
farm_pid="" pid=""
cleanup() {
  for p in $pid $farm_pid; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
# A sanitizer's report is printed whole (its two stacks), anything else the log's tail.
fail() {
  echo "FAIL: $*" >&2
  if grep -q 'WARNING: ThreadSanitizer' "$tmp/serve.log" 2>/dev/null; then
    sed -n '/WARNING: ThreadSanitizer/,$p' "$tmp/serve.log" >&2
  elif [ -f "$tmp/serve.log" ]; then
    tail -20 "$tmp/serve.log" >&2
  fi
  exit 1
}
url_from() {
  for _ in $(seq 100); do
    u=$(grep -o 'http://127.0.0.1:[0-9]*' "$1" 2>/dev/null | head -1 || true)
    [ -n "$u" ] && { echo "$u"; return 0; }
    sleep 0.1
  done
  return 1
}

"$bin" farm --feeds 100 --speed 600 --start-paused --listen 127.0.0.1:0 --opml "$tmp/feeds.opml" \
  --pins "$tmp/pins.txt" --truth "$tmp/truth.jsonl" >"$tmp/farm.log" 2>&1 &
farm_pid=$!
farm=$(url_from "$tmp/farm.log") || fail "the farm did not start"

admin=backup-admin
cat >"$tmp/feedplane.toml" <<TOML
[crawler]
min_interval_s = 5
max_interval_s = 10
[reflector]
snapshot_interval_s = 1
TOML
# start DATA SHARDS: serve on DATA, ready; sets pid and base.
start() {
  : >"$tmp/serve.log"
  FEEDPLANE_ADMIN_TOKEN=$admin "$bin" serve --listen 127.0.0.1:0 --data "$1" --shards "$2" \
    --no-pin --config "$tmp/feedplane.toml" --resolve-file "$tmp/pins.txt" >"$tmp/serve.log" 2>&1 &
  pid=$!
  base=$(url_from "$tmp/serve.log") || fail "serve did not start on $1"
  for _ in $(seq 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$base/readyz")" = 200 ] && return 0
    kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up on $1"
    sleep 0.05
  done
  fail "/readyz never answered 200 on $1"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }

start "$tmp/data" 2
curl -sf -H "Authorization: Bearer $admin" --data-binary @"$tmp/feeds.opml" \
  "$base/api/sources:import" >/dev/null || fail "OPML import"
curl -sf -X POST "$farm/_farm/start" >/dev/null

# The client: PHASE before (subscribe, poll until matches, back up, subscribe more), then
# checks against a restored copy (restored) or the original (original).
cat >"$tmp/client.py" <<'PY'
import http.client, json, sys, time, urllib.parse
base, admin, phase, state = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
u = urllib.parse.urlparse(base)
def req(method, path, body=None, token=None):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    h = {"Authorization": "Bearer " + token} if token else {}
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    out = (r.status, r.read(), dict(r.getheaders()))
    c.close()
    return out
def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)
def items(feed):
    code, body, _ = req("GET", feed + ".json")
    return code, ([i["id"] for i in json.loads(body)["items"]] if code == 200 else [])
def subscribe(secret, q):
    code, body, _ = req("POST", "/api/subscriptions", json.dumps({"query": q}), secret)
    if code != 201 and code != 200:
        fail(f"subscription {q}: {code} {body!r}")
    r = json.loads(body)
    return r["id"], r["feeds"]["rss"]
def wait_backup(name):
    for _ in range(600):
        code, body, _ = req("GET", "/api/backups/" + name, token=admin)
        if code != 200:
            fail(f"GET /api/backups/{name}: {code} {body!r}")
        b = json.loads(body)
        if b["state"] != "running":
            return b
        time.sleep(0.05)
    fail(f"backup {name} still running after 30 s")
def backup_metrics():
    code, body, _ = req("GET", "/metrics")
    if code != 200:
        fail(f"GET /metrics: {code}")
    return {l.split(" ")[0]: float(l.split(" ")[1]) for l in body.decode().splitlines()
            if l.startswith("feedplane_backup")}

if phase == "before":
    code, body, _ = req("POST", "/api/accounts")
    acct = json.loads(body)
    secret = acct["secret"]
    queries = ["school", "years", "music OR film", "new", "time", "first", "world", "people",
               "life", "water", "house", "night"]
    subs = {}
    for q in queries:
        sid, feed = subscribe(secret, q)
        subs[sid] = feed
    # Poll until several feeds hold matches (what the poller has seen before the backup).
    seen = {}
    for _ in range(120):
        seen = {sid: items(feed)[1] for sid, feed in subs.items()}
        if sum(1 for v in seen.values() if v) >= 4:
            break
        time.sleep(0.5)
    if sum(1 for v in seen.values() if v) < 4:
        fail(f"too few feeds with matches before the backup: {seen}")
    # Every snapshot round writes lists; let one pass so the backup copies real snapshots.
    time.sleep(1.5)
    # The API's errors first.
    for body, want, err in [(json.dumps({"name": "x"}), 401, "unauthenticated")]:
        code, b, _ = req("POST", "/api/backups", body)
        if code != want or json.loads(b)["error"] != err:
            fail(f"POST without the admin token: {code} {b!r}")
    for body, want, err in [(json.dumps({"name": "../escape"}), 400, "invalid_name"),
                            (json.dumps({"name": ".hidden"}), 400, "invalid_name"),
                            (json.dumps({"name": 7}), 400, "bad_value"),
                            ("{\"name\": ", 400, "bad_json"),
                            ("[1]", 400, "bad_json"),
                            (json.dumps({"name": "a", "path": "/etc"}), 400, "unknown_field")]:
        code, b, _ = req("POST", "/api/backups", body, admin)
        if code != want or json.loads(b)["error"] != err:
            fail(f"POST /api/backups {body!r}: {code} {b!r}, wanted {want} {err}")
    code, b, _ = req("GET", "/api/backups/nothing-here", token=admin)
    if code != 404:
        fail(f"GET of an unknown backup: {code} {b!r}")
    seen = {sid: items(feed)[1] for sid, feed in subs.items()}
    code, body, headers = req("POST", "/api/backups", json.dumps({"name": "b1"}), admin)
    if code != 202:
        fail(f"POST /api/backups: {code} {body!r}")
    started = json.loads(body)
    if started["name"] != "b1" or started["state"] != "running":
        fail(f"POST /api/backups answered {started}")
    if headers.get("Location") != "/api/backups/b1":
        fail(f"Location: {headers.get('Location')!r}")
    b = wait_backup("b1")
    if b["state"] != "complete" or b["files"] < 3 or b["bytes"] <= 0 or b["articles_through"] < 1:
        fail(f"backup b1: {b}")
    code, body, _ = req("POST", "/api/backups", json.dumps({"name": "b1"}), admin)
    if code != 409 or json.loads(body)["error"] != "exists":
        fail(f"a second b1: {code} {body!r}")
    # Unnamed: a timestamp name.
    code, body, _ = req("POST", "/api/backups", "", admin)
    if code != 202:
        fail(f"POST /api/backups without a body: {code} {body!r}")
    auto = wait_backup(json.loads(body)["name"])
    if not auto["name"].startswith("backup-") or auto["state"] != "complete":
        fail(f"unnamed backup: {auto}")
    # /metrics counts both, and names when the last one completed.
    m = backup_metrics()
    if (m.get("feedplane_backups_completed_total") != 2 or
            m.get("feedplane_backups_failed_total") != 0 or
            m.get("feedplane_backup_running") != 0 or
            m.get("feedplane_backup_last_complete_timestamp_seconds", 0) * 1000 <
            auto["finished_ms"] - 1):
        fail(f"/metrics on backups: {m}")
    code, body, _ = req("GET", "/api/backups", token=admin)
    names = [x["name"] for x in json.loads(body)["backups"]]
    if code != 200 or "b1" not in names or auto["name"] not in names:
        fail(f"GET /api/backups: {code} {body!r}")
    # An operator removes one: it is gone from the API too.
    import shutil
    shutil.rmtree(auto["path"])
    code, body, _ = req("GET", "/api/backups/" + auto["name"], token=admin)
    if code != 404:
        fail(f"a removed backup still answers: {code} {body!r}")
    code, body, _ = req("GET", "/api/backups", token=admin)
    if auto["name"] in [x["name"] for x in json.loads(body)["backups"]]:
        fail(f"a removed backup is still listed: {body!r}")
    # After the backup: subscriptions the backup must not hold.
    after = {}
    for q in ["school", "years", "music OR film"]:
        sid, feed = subscribe(secret, q)
        after[sid] = feed
    json.dump({"secret": secret, "subs": subs, "seen": seen, "after": after,
               "path": b["path"], "finished_ms": b["finished_ms"]}, open(state, "w"))
    print(f"backup b1: {b['files']} files, {b['bytes']} bytes, articles through "
          f"{b['articles_through']}; {sum(len(v) for v in seen.values())} items seen in "
          f"{len(subs)} feeds")
else:
    st = json.load(open(state))
    for sid, feed in st["subs"].items():
        code, ids = items(feed)
        if code != 200:
            fail(f"{phase}: subscription {sid} acknowledged before the backup: {code}")
        if len(ids) != len(set(ids)):
            fail(f"{phase}: {sid} serves an item twice: {ids}")
        missing = [i for i in st["seen"][sid] if i not in ids]
        # A list keeps the last k (10): an item may only have been pushed out by newer ones.
        if missing and len(ids) < 10:
            fail(f"{phase}: {sid} lost items seen before the backup: {missing} (serves {ids})")
    code, body, _ = req("GET", "/api/subscriptions", token=st["secret"])
    if code != 200:
        fail(f"{phase}: the account's secret: {code} {body!r}")
    listed = {s["id"] for s in json.loads(body)["subscriptions"]}
    for sid, feed in st["after"].items():
        code, _ = items(feed)
        if phase == "restored" and (code != 404 or sid in listed):
            fail(f"restored: {sid}, created after the backup, is there: {code}")
        if phase == "original" and (code != 200 or sid not in listed):
            fail(f"original: {sid}, created after the backup, is lost: {code}")
    if phase == "original":
        # A restart keeps the newest complete backup's time on /metrics (b1: the other was
        # removed), and counts none made by this process.
        m = backup_metrics()
        if (m.get("feedplane_backups_completed_total") != 0 or
                abs(m.get("feedplane_backup_last_complete_timestamp_seconds", 0) * 1000 -
                    st["finished_ms"]) > 1):
            fail(f"original: /metrics on backups after a restart: {m}, b1 at {st['finished_ms']}")
    if not set(st["subs"]) <= listed:
        fail(f"{phase}: subscriptions missing from the list: {set(st['subs']) - listed}")
    print(f"{phase}: {len(st['subs'])} subscriptions and their seen items served")
PY

python3 "$tmp/client.py" "$base" "$admin" before "$tmp/state.json" || fail "before the backup"
b1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["path"])' "$tmp/state.json")
[ "$b1" = "$tmp/data/backups/b1" ] || fail "backup path $b1"
for f in BACKUP.json db/CURRENT lists; do [ -e "$b1/$f" ] || fail "backup lacks $f"; done
ls "$b1/lists" | grep -q '^p-.*\.lists$' || fail "backup holds no list snapshot"
if ls -A "$tmp/data/backups" | grep -q '\.tmp$'; then fail "a temporary directory was left"; fi
stop

# The original after a clean stop: everything, the later subscriptions too.
start "$tmp/data" 2
python3 "$tmp/client.py" "$base" "$admin" original "$tmp/state.json" || fail "the original data"
stop

# A copy of the backup, on another shard count.
cp -a "$b1" "$tmp/restored"
start "$tmp/restored" 3
grep -q "lists from [1-9][0-9]* partition snapshots" "$tmp/serve.log" ||
  fail "the restored copy did not start from the backup's list snapshots"
python3 "$tmp/client.py" "$base" "$admin" restored "$tmp/state.json" || fail "the restored copy"
stop

# SIGKILL right after a backup starts: after a restart, that backup is complete or absent.
start "$tmp/data" 2
code=$(curl -s -o "$tmp/k.json" -w '%{http_code}' -H "Authorization: Bearer $admin" \
  --data '{"name": "killed"}' "$base/api/backups")
kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""
[ "$code" = 202 ] || fail "POST before the kill: $code $(cat "$tmp/k.json")"
start "$tmp/data" 2
if ls -A "$tmp/data/backups" | grep -q '\.tmp$'; then fail "the killed backup's temporary directory stayed"; fi
if [ -e "$tmp/data/backups/killed" ]; then
  state=$(curl -sf -H "Authorization: Bearer $admin" "$base/api/backups/killed" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  [ "$state" = complete ] || fail "the killed backup is there but $state"
  echo "the backup killed at once had completed"
else
  echo "the backup killed at once left nothing"
fi
stop

# A backup directory that cannot be made: 500 with the reason, and serve goes on.
: >"$tmp/afile"
printf '[server]\nbackup_dir = "%s/afile/backups"\n' "$tmp" >>"$tmp/feedplane.toml"
start "$tmp/data" 2
code=$(curl -s -o "$tmp/e.json" -w '%{http_code}' -H "Authorization: Bearer $admin" -X POST \
  "$base/api/backups")
[ "$code" = 500 ] && grep -q '"backup_dir"' "$tmp/e.json" || fail "unusable backup_dir: $code $(cat "$tmp/e.json")"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/healthz")" = 200 ] || fail "serve unhealthy after a refused backup"
stop
echo "backup: all checks passed"
