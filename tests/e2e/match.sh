#!/usr/bin/env bash
# `feedplane match`: ids ascending per article in input order, invalid queries reported
# with their line and skipped, markup never matching, and agreement with a brute-force
# Python check on a generated workload.
set -euo pipefail
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$tmp/subs.txt" <<'SUBS'
rust tokio
"new york" OR boston
(broken
center
c++ -java
title:rust
e-mail
SUBS
cat >"$tmp/arts.jsonl" <<'ARTS'
{"title": "Rust news", "content": "<p>Tokio 1.0 in <b>New</b> York</p>"}
{"title": "x", "content": "<div class=\"center-wrap\">C++ and Java</div><script>center()</script>"}

{"content": "c++ in Boston, by E-Mail"}
{"title": "Caf\u00e9", "content": "nothing"}
ARTS
"$bin" match --subscriptions "$tmp/subs.txt" --articles "$tmp/arts.jsonl" >"$tmp/out" 2>"$tmp/err" ||
  fail "exit status $? ($(cat "$tmp/err"))"
cat >"$tmp/want" <<'WANT'
{"article": 0, "matches": [0, 1, 5]}
{"article": 1, "matches": []}
{"article": 2, "matches": [1, 4, 6]}
{"article": 3, "matches": []}
WANT
diff -u "$tmp/want" "$tmp/out" || fail "matches differ"
grep -q "subs.txt:3: subscription 2 skipped: unbalanced parentheses" "$tmp/err" || fail "bad query not reported: $(cat "$tmp/err")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "unexpected stderr: $(cat "$tmp/err")"

# A query nested 20,000 deep is one skipped line with the limit named, not a crash.
python3 -c "print('(' * 20000 + 'apple' + ')' * 20000); print('-' * 40000 + 'rust'); print('rust')" >"$tmp/deep.txt"
"$bin" match -s "$tmp/deep.txt" -a "$tmp/arts.jsonl" >"$tmp/out" 2>"$tmp/err" || fail "deep query: exit status $?"
grep -q "deep.txt:1: subscription 0 skipped: too deeply nested: .*(the limit is 32)" "$tmp/err" || fail "deep query: $(head -c 300 "$tmp/err")"
grep -q "deep.txt:2: subscription 1 skipped: too deeply nested" "$tmp/err" || fail "deep '-': $(head -c 300 "$tmp/err")"
head -1 "$tmp/out" | grep -q '"matches": \[2\]' || fail "deep query: later lines lost: $(head -1 "$tmp/out")"

# --words: the subscription's words found in the article.
"$bin" match -s "$tmp/subs.txt" -a "$tmp/arts.jsonl" --words 2>/dev/null | head -1 |
  grep -q '"words": \[\["rust", "tokio"\]\|"words": \[\["tokio", "rust"\]' || fail "--words"

# A broken article line: reported, empty matches, exit status 1, later articles still run.
printf '{"title": "rust tokio"}\nnot json\n{"content": "boston"}\n' >"$tmp/bad.jsonl"
if "$bin" match -s "$tmp/subs.txt" -a "$tmp/bad.jsonl" >"$tmp/out" 2>"$tmp/err"; then fail "bad article accepted"; fi
printf '{"article": 0, "matches": [0, 5]}\n{"article": 1, "matches": []}\n{"article": 2, "matches": [1]}\n' | diff -u - "$tmp/out" || fail "bad article output"
grep -q "bad.jsonl:2: article 1" "$tmp/err" || fail "bad article not reported"

# source: scopes: "source" is the article's feed URL (its host and the hosts above it scope
# it, never a lookalike or a word of the text), "source_id" its source id.
cat >"$tmp/src_subs.txt" <<'SUBS'
source:apple.com ios
ios -source:apple.com
source:00000000000000aa
source:com
SUBS
cat >"$tmp/src_arts.jsonl" <<'ARTS'
{"title": "iOS 18", "content": "x", "source": "https://developer.apple.com/news/rss/news.rss", "source_id": "00000000000000AA"}
{"title": "iOS tips", "content": "x", "source": "https://www.notapple.com/feed"}
{"title": "iOS and apple.com", "content": "x"}
{"title": "x", "content": "x", "source_id": "aa"}
ARTS
if "$bin" match -s "$tmp/src_subs.txt" -a "$tmp/src_arts.jsonl" >"$tmp/out" 2>"$tmp/err"; then fail "bad source_id accepted"; fi
printf '{"article": 0, "matches": [0, 2]}\n{"article": 1, "matches": [1]}\n{"article": 2, "matches": [1]}\n{"article": 3, "matches": []}\n' |
  diff -u - "$tmp/out" || fail "source: scopes"
grep -q "src_subs.txt:4: subscription 3 skipped: 'source:com' at column 1: a single label is not a scope" "$tmp/err" || fail "source:com not refused: $(cat "$tmp/err")"
grep -q "src_arts.jsonl:4: article 3 has no matches: \"source_id\" is not 16 hex digits" "$tmp/err" || fail "bad source_id not reported: $(cat "$tmp/err")"

# Missing files.
if "$bin" match -s "$tmp/none" -a "$tmp/arts.jsonl" 2>"$tmp/err"; then fail "missing file accepted"; fi
grep -q "cannot open" "$tmp/err" || fail "missing file message"

# Brute force: plain ASCII conjunctions and OR/NOT over a small vocabulary, checked by a
# dozen lines of Python that know nothing of the index.
python3 - "$tmp" <<'PY'
import json, random, sys
d = sys.argv[1]
rng = random.Random(3)
words = ["alpha", "beta", "gamma", "delta", "omega", "zeta", "kappa", "sigma"]
subs = []
for _ in range(300):
    k = rng.randint(1, 3)
    q = rng.sample(words, k)
    if rng.random() < 0.2: q.append("-" + rng.choice([w for w in words if w not in q]))
    subs.append(q)
arts = [[rng.choice(words) for _ in range(rng.randint(0, 6))] for _ in range(200)]
open(d + "/bf_subs.txt", "w").write("".join(" ".join(q) + "\n" for q in subs))
open(d + "/bf_arts.jsonl", "w").write("".join(json.dumps({"title": "", "content": " ".join(a).upper()}) + "\n" for a in arts))
with open(d + "/bf_want", "w") as f:
    for i, a in enumerate(arts):
        s = set(a)
        ids = [j for j, q in enumerate(subs) if all((w[1:] not in s) if w.startswith("-") else (w in s) for w in q)]
        f.write(json.dumps({"article": i, "matches": ids}).replace(",", ", ").replace(",  ", ", ") + "\n")
PY
"$bin" match -s "$tmp/bf_subs.txt" -a "$tmp/bf_arts.jsonl" >"$tmp/bf_out"
diff -q "$tmp/bf_want" "$tmp/bf_out" >/dev/null || fail "brute-force check differs: $(diff "$tmp/bf_want" "$tmp/bf_out" | head -5)"
echo "match ok"
