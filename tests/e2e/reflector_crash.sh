#!/usr/bin/env bash
# Crash test of the reflector: `feedplane serve --shards 3` is killed with SIGKILL at a
# random moment while clients create subscriptions (API and bulk), delete some and poll
# feeds; then restarted on the same data directory. After every restart: every
# acknowledged creation is there (its feed answers, the API finds it), every acknowledged
# deletion stays deleted, every item a poller saw is still served, and no feed holds one
# entry twice. ROUNDS (default 20) rounds; REFLECTOR_CRASH_ROUNDS=100 for the long mode.
# Articles are appended to the store's log once, before the first start (serve re-matches
# the log at each start), so the expected feeds do not move.
# SIGKILL leaves the page cache intact: this tests recovery logic, not fsync (the store's
# fault_fs tests cover the store's power loss). The list snapshots are then given what a
# power loss could leave of them (damage_lists): per partition file, the previous round's
# file (a rename that was not yet durable), the file cut short (a file system that does not
# order data before a rename), or a partial temporary file beside it; the restart must
# refuse what is damaged, re-match it from the log and still pass every check. The second
# half of the rounds damages nothing and sets a 1 s recent window, so most of its starts
# replay only the log's tail, and the article log is collected every second (articles past
# the window that no list holds are deleted) between the kills; a last phase appends
# articles while serve is stopped and checks that the next start replays exactly those and
# every list takes them, then that a collection of articles no list holds changes no list.
set -euo pipefail
bin=$1
put=$2
rounds=${REFLECTOR_CRASH_ROUNDS:-20}
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log" >&2; exit 1; }

admin=crash-admin
# Lists are snapshotted every second, so kills land before, during and after snapshot
# rounds and restarts restore lists from them (the log alone is replayed when none holds).
# The recent window (backfill_window_s): the default (24 h, which holds every article
# here) in the first half of the rounds, which also damage the snapshots; 1 s in the
# second half, which do not, so that a start replays only what the lists need from their
# snapshots' sequences (a damaged file, or a list backfilled from sequence 1, needs the
# whole log): kill -9 at random moments then tests the replay of the log's tail too.
config() {
  printf '[reflector]\nmax_subscriptions = 1000000\nsnapshot_interval_s = 1\narticle_gc_interval_s = 1\nbackfill_window_s = %s\n[api]\naccount_requests_per_s = 1000000\nsignups_per_hour = 1000\n' \
    "$1" >"$tmp/feedplane.toml"
}
config 86400
start() {
  : >"$tmp/serve.log"  # now, not in the child: a grep before it truncates would read the last port
  FEEDPLANE_ADMIN_TOKEN=$admin "$bin" serve --config "$tmp/feedplane.toml" --listen 127.0.0.1:0 \
    --data "$tmp/data" --shards 3 --no-pin >"$tmp/serve.log" 2>&1 &
  pid=$!
  port=""
  for _ in $(seq 100); do
    port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/serve.log" 2>/dev/null | cut -d: -f3 || true)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || fail "serve exited at start-up"
    sleep 0.05
  done
  [ -n "$port" ] || fail "serve did not print its address"
  for _ in $(seq 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ] && return 0
    sleep 0.05
  done
  fail "/readyz never answered 200"
}

mkdir -p "$tmp/data"
now=$(date +%s)
python3 - "$now" >"$tmp/articles.jsonl" <<'PY'
import json, sys
now = int(sys.argv[1])
words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
for i in range(200):
    w = [words[i % 8], words[(i * 3 + 1) % 8]]
    print(json.dumps({"title": f"{w[0]} {w[1]} news {i}", "link": f"https://news.example/{i}",
                      "guid": f"news-{i}", "summary": f"<p>{' '.join(w)} item {i}</p>",
                      "source_url": "https://news.example/feed", "published": now - 3600 + i}))
PY
# The store's directory exists once serve created it.
start
kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""
"$put" "$tmp/data/db" <"$tmp/articles.jsonl" >/dev/null || fail "put_articles"

state="$tmp/state.json"
echo '{}' >"$state"
# The client: checks what earlier rounds had acknowledged, then (unless ROUND is "final")
# loads and polls until the server dies under it.
cat >"$tmp/client.py" <<'PY'
import http.client, json, random, sys, time
port, path, admin, rnd = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
st = json.load(open(path))
st.setdefault("subs", {})      # id -> {"feed", "secret" or None}
st.setdefault("deleted", [])
st.setdefault("seen", {})      # feed -> ids seen
def conn():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=5)
def req(c, method, url, body=None, token=None):
    h = {"Authorization": "Bearer " + token} if token else {}
    c.request(method, url, body=body, headers=h)
    r = c.getresponse()
    return r.status, r.read()
def save():
    json.dump(st, open(path + ".tmp", "w"))
    import os
    os.replace(path + ".tmp", path)
c = conn()
bad = []
# A deletion in flight when the server died may or may not have happened.
maybe = st.pop("deleting", None)
if maybe in st["subs"]:
    code, _ = req(c, "GET", st["subs"][maybe]["feed"] + ".json")
    if code == 404:
        st["deleted"].append(st["subs"].pop(maybe)["feed"])
for sid, s in st["subs"].items():
    code, body = req(c, "GET", s["feed"] + ".json")
    if code != 200:
        bad.append(f"acknowledged {sid} lost: {code}")
        continue
    ids = [i["id"] for i in json.loads(body)["items"]]
    if len(ids) != len(set(ids)):
        bad.append(f"{sid}: an entry twice: {ids}")
    for seen in st["seen"].get(s["feed"], []):
        if seen not in ids:
            bad.append(f"{sid}: {seen} was seen and is gone")
    if s.get("secret"):
        code, _ = req(c, "GET", "/api/subscriptions/" + sid, token=s["secret"])
        if code != 200:
            bad.append(f"acknowledged {sid} not in the API: {code}")
for d in st["deleted"]:
    code, _ = req(c, "GET", d + ".json")
    if code != 404:
        bad.append(f"acknowledged deletion of {d} undone: {code}")
if bad:
    print("\n".join(bad[:20]), file=sys.stderr)
    open(path + ".failed", "w").write("\n".join(bad))
    sys.exit(1)
save()
open(path + ".checked", "w").write(str(rnd))
if rnd == "final":
    print(f"{len(st['subs'])} acknowledged subscriptions, {len(st['deleted'])} deletions, "
          f"{sum(len(v) for v in st['seen'].values())} seen items: all there after the kills")
    sys.exit(0)
if "secret" not in st:
    code, body = req(c, "POST", "/api/accounts")
    assert code == 201, (code, body)
    st["secret"] = json.loads(body)["secret"]
    save()
words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
n = 0
while True:  # until the server dies under us
    try:
        n += 1
        q = " ".join(random.sample(words, 2 if n % 3 else 1))
        if n % 4 == 0:
            lines = "\n".join(json.dumps({"account": f"bulk-{rnd}", "query": q, "k": 50,
                                          "backfill": bool(n % 8)}) for _ in range(20))
            code, body = req(c, "POST", "/api/subscriptions:bulk", lines, admin)
            if code == 200:
                for l in body.decode().splitlines():
                    o = json.loads(l)
                    if "id" in o:
                        st["subs"][o["id"]] = {"feed": o["feed"], "secret": None}
        else:
            code, body = req(c, "POST", "/api/subscriptions", json.dumps({"query": q, "k": 50}), st["secret"])
            if code == 201:
                o = json.loads(body)
                st["subs"][o["id"]] = {"feed": o["feeds"]["rss"], "secret": st["secret"]}
        if n % 7 == 0 and st["subs"]:
            sid = random.choice([k for k, v in st["subs"].items() if v["secret"]] or [None])
            if sid:
                st["deleting"] = sid
                save()
                code, _ = req(c, "DELETE", "/api/subscriptions/" + sid, token=st["secret"])
                if code == 204:
                    st["deleted"].append(st["subs"].pop(sid)["feed"])
                del st["deleting"]
        if st["subs"]:
            sid = random.choice(list(st["subs"]))
            feed = st["subs"][sid]["feed"]
            code, body = req(c, "GET", feed + ".json")
            if code == 200:
                st["seen"][feed] = [i["id"] for i in json.loads(body)["items"]]
        save()
    except (OSError, http.client.HTTPException):
        save()
        break
PY
damaged=0
damage_lists() {  # one process for the ~1,000 partition files of a round
  local n
  [ -d "$tmp/data/lists" ] || return 0
  n=$(python3 - "$tmp/data/lists" "$tmp/lists.prev" <<'PY'
import os, random, shutil, sys
d, prev = sys.argv[1], sys.argv[2]
now = {}
for name in sorted(os.listdir(d)):
    if name.endswith((".lists", ".words")):
        now[name] = open(os.path.join(d, name), "rb").read()
hit = 0
for name, data in now.items():
    path = os.path.join(d, name)
    roll = random.randrange(6)
    if roll == 0 and os.path.exists(os.path.join(prev, name)):
        shutil.copyfile(os.path.join(prev, name), path)  # the rename was not yet durable
        hit += 1
    elif roll == 1 and data:
        open(path, "wb").write(data[:random.randrange(len(data))])  # data not ordered
        hit += 1
    elif roll == 2:
        open(path + ".tmp", "wb").write(os.urandom(random.randrange(512)))  # a partial temporary
shutil.rmtree(prev, ignore_errors=True)
os.makedirs(prev)
for name, data in now.items():
    open(os.path.join(prev, name), "wb").write(data)
print(hit)
PY
  ) || fail "damage_lists"
  damaged=$((damaged + n))
}
tails=0
for round in $(seq "$rounds"); do
  if [ "$round" -le $((rounds / 2)) ]; then config 86400; else config 1; fi
  start
  grep -q "store: replayed" "$tmp/serve.log" && tails=$((tails + 1))
  python3 "$tmp/client.py" "$port" "$state" "$admin" "$round" &
  client=$!
  # The check of what earlier rounds acknowledged runs before the kill; the load after it.
  for _ in $(seq 600); do
    [ "$(cat "$tmp/state.json.checked" 2>/dev/null)" = "$round" ] && break
    [ -f "$tmp/state.json.failed" ] && fail "round $round: $(cat "$tmp/state.json.failed")"
    kill -0 "$client" 2>/dev/null || break
    sleep 0.05
  done
  sleep "$((RANDOM % 2)).$((RANDOM % 9 + 1))"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
  wait "$client" || fail "round $round: $(cat "$tmp/state.json.failed" 2>/dev/null)"
  [ "$(cat "$tmp/state.json.checked" 2>/dev/null)" = "$round" ] || fail "round $round: the check did not run"
  [ "$round" -gt $((rounds / 2)) ] || damage_lists
done
# The damage must have been there to be survived: over 10 rounds some file is always hit.
[ "$rounds" -lt 5 ] || [ "$damaged" -gt 0 ] || fail "no snapshot file was ever damaged"
start
# The same check once more, with the same handling of a deletion the last kill interrupted.
python3 "$tmp/client.py" "$port" "$state" "$admin" final ||
  fail "after the last round: $(cat "$tmp/state.json.failed" 2>/dev/null)"
kill "$pid"; wait "$pid" || true; pid=""
# A clean stop snapshots every list; the next start restores them and must serve the same.
start
python3 "$tmp/client.py" "$port" "$state" "$admin" final ||
  fail "after a clean restart: $(cat "$tmp/state.json.failed" 2>/dev/null)"
grep -q "lists from .* partition snapshots" "$tmp/serve.log" ||
  fail "the start after a clean stop restored no list from its snapshots"
cat >"$tmp/lists.py" <<'PY'
import http.client, json, sys
port, state, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
st = json.load(open(state))
c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
lists = {}
for sid, s in st["subs"].items():
    c.request("GET", s["feed"] + ".json")
    lists[sid] = [i["id"] for i in json.loads(c.getresponse().read())["items"]]
json.dump(lists, open(out, "w"))
PY
python3 "$tmp/lists.py" "$port" "$state" "$tmp/before.json" || fail "reading the lists"
kill "$pid"; wait "$pid" || true; pid=""
# The log's tail alone: with a recent window of 1 s and every list restored from the clean
# stop's snapshots, the next start replays only the articles added since, and they reach
# the lists; everything seen before is still served.
config 1
python3 - "$now" >"$tmp/more.jsonl" <<'PY'
import json, sys
now = int(sys.argv[1])
for i in range(200, 240):
    print(json.dumps({"title": f"alpha bravo charlie delta echo foxtrot golf hotel {i}",
                      "link": f"https://news.example/{i}", "guid": f"news-{i}",
                      "summary": f"<p>later item {i}</p>", "source_url": "https://news.example/feed",
                      "published": now - 60}))
PY
first=$("$put" "$tmp/data/db" <"$tmp/more.jsonl" | awk 'NR == 1 { print $1 }') || fail "put_articles"
sleep 2  # the new articles are then older than the 1 s window too
start
grep -q "replayed 40 articles from sequence $first " "$tmp/serve.log" ||
  fail "the start did not replay only the 40 new articles from $first: $(grep 'store: replayed' "$tmp/serve.log")"
replayed=$(curl -sS "http://127.0.0.1:$port/metrics" | grep '^feedplane_store_articles_replayed_total ' || true)
[ "$replayed" = "feedplane_store_articles_replayed_total 40" ] ||
  fail "/metrics does not count the 40 replayed articles: '$replayed'"
curl -s "http://127.0.0.1:$port/metrics" | grep -x "feedplane_store_replay_first_seq $first" >/dev/null ||
  fail "/metrics does not give the replay's first sequence $first"
python3 "$tmp/lists.py" "$port" "$state" "$tmp/after.json" || fail "reading the lists"
python3 - "$tmp/before.json" "$tmp/after.json" <<'PY' || fail "the lists after the tail's replay"
import json, sys
before, after = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
new = [f"news-{i}" for i in range(239, 199, -1)]  # every query matches them, newest first
bad = [f"{sid}: {after.get(sid)} after, {ids} before" for sid, ids in before.items()
       if after.get(sid) != (new + ids)[:50]]
print("\n".join(bad[:5]), file=sys.stderr)
sys.exit(1 if bad or not before else 0)
PY
# The article log's collection: articles past the 1 s window that no list holds leave the
# store. Twenty that match no query are appended; once the collection has taken them, a
# kill -9 and a restart (no article cache: every item renders from the store) must serve
# the same lists, and the log must no longer list them.
kill "$pid"; wait "$pid" || true; pid=""
python3 - "$now" >"$tmp/stray.jsonl" <<'PY'
import json, sys
for i in range(300, 320):
    print(json.dumps({"title": f"zulu yankee {i}", "link": f"https://news.example/{i}",
                      "guid": f"stray-{i}", "summary": "<p>stray</p>",
                      "source_url": "https://news.example/feed", "published": int(sys.argv[1]) - 60}))
PY
"$put" "$tmp/data/db" <"$tmp/stray.jsonl" >/dev/null || fail "put_articles (stray)"
start
deleted=0
for _ in $(seq 300); do
  deleted=$(curl -s "http://127.0.0.1:$port/metrics" | awk '$1 == "feedplane_store_articles_deleted_total" { print $2 }')
  [ "${deleted:-0}" -ge 20 ] && break
  sleep 0.05
done
[ "${deleted:-0}" -ge 20 ] || fail "the collection deleted ${deleted:-0} articles, not the 20 no list holds"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""
start
python3 "$tmp/lists.py" "$port" "$state" "$tmp/collected.json" || fail "reading the lists"
cmp -s "$tmp/after.json" "$tmp/collected.json" || fail "the lists changed after the collection and a kill -9"
curl -s -H "Authorization: Bearer $admin" "http://127.0.0.1:$port/api/articles?limit=10000" |
  grep -q '"stray-' && fail "/api/articles still lists a collected article"
kill "$pid"; wait "$pid" || true; pid=""
echo "reflector crash test: ok ($rounds rounds of kill -9, $damaged snapshot files reverted or cut short as a power loss could; $tails starts replayed only the log's tail)"
