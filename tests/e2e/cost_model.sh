#!/usr/bin/env bash
# scripts/cost-model's converter (--from DIR: no benchmark is run): Google Benchmark JSON
# in the shape the project's benchmarks print goes in, a measured.toml that
# `feedplane provision` loads comes out, with this run's figures and provenance.
set -euo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir "$tmp/in"
cat >"$tmp/in/matcher.json" <<'J'
{"context": {}, "benchmarks": [
 {"name": "match/index/subs:10000/words:61", "run_type": "iteration", "time_unit": "us", "cpu_time": 2.5, "median_us": 2.0},
 {"name": "match/index/subs:1000000/words:61", "run_type": "iteration", "time_unit": "us", "cpu_time": 12.0, "median_us": 11.0},
 {"name": "match/index/subs:1000000/words:2000", "run_type": "iteration", "time_unit": "us", "cpu_time": 320.0, "median_us": 300.0},
 {"name": "BM_prepare_article/61", "run_type": "iteration", "time_unit": "ns", "cpu_time": 1800.0}]}
J
cat >"$tmp/in/http_client.json" <<'J'
{"context": {}, "benchmarks": [
 {"name": "feedplane_vs_libcurl_multi/200/iterations:4/manual_time", "run_type": "iteration", "time_unit": "ms", "fp_cpu_us_per_fetch": 14.0},
 {"name": "feedplane_vs_libcurl_multi/304/iterations:4/manual_time", "run_type": "iteration", "time_unit": "ms", "fp_cpu_us_per_fetch": 12.0},
 {"name": "feedplane_vs_libcurl_multi/https_200/iterations:4/manual_time", "run_type": "iteration", "time_unit": "ms", "fp_cpu_us_per_fetch": 30.0},
 {"name": "feedplane_vs_libcurl_multi/https_new_conn/iterations:4/manual_time", "run_type": "iteration", "time_unit": "ms", "fp_cpu_us_per_fetch": 55.0},
 {"name": "feedplane_vs_libcurl_multi/https_new_full/iterations:4/manual_time", "run_type": "iteration", "time_unit": "ms", "fp_cpu_us_per_fetch": 130.0}]}
J
cat >"$tmp/in/feed.json" <<'J'
{"context": {}, "benchmarks": [{"name": "BM_feedplane_rss", "run_type": "iteration", "time_unit": "ns", "cpu_time": 11000.0}]}
J
cat >"$tmp/in/ring.json" <<'J'
{"context": {}, "benchmarks": [
 {"name": "BM_broadcast/1/real_time", "run_type": "iteration", "time_unit": "ms", "sec_per_article_per_shard": 4.2e-08},
 {"name": "BM_article_freeze/61", "run_type": "iteration", "time_unit": "ns", "bytes_per_article": 3000.0}]}
J
cat >"$tmp/in/reflector.json" <<'J'
{"context": {}, "benchmarks": [{"name": "BM_list_insert/subs:1000000/k:10", "run_type": "iteration", "time_unit": "ns", "sec_per_insert": 9.5e-08}]}
J
cp "$src/provisioner/models/measured.toml" "$tmp/measured.toml"
"$src/scripts/cost-model" --from "$tmp/in" "$tmp/measured.toml" >"$tmp/out" || fail "cost-model: exit $?"
grep -q "wrote .* (3 match points)" "$tmp/out" || fail "$(cat "$tmp/out")"
python3 - "$tmp/measured.toml" <<'PY' || fail "measured.toml content"
import sys, tomllib
m = tomllib.load(open(sys.argv[1], "rb"))
c = m["coefficients"]
assert abs(c["cpu_per_fetch_200"]["value"] - 14e-6) < 1e-12, c["cpu_per_fetch_200"]
assert c["cpu_per_fetch_200"]["kind"] == "measured" and c["cpu_per_fetch_200"]["commit"]
assert abs(c["cpu_per_fetch_tls_extra"]["value"] - 16e-6) < 1e-12
assert abs(c["cpu_per_tls_handshake"]["value"] - 100e-6) < 1e-12, c["cpu_per_tls_handshake"]
assert abs(c["cpu_per_tls_resumed_handshake"]["value"] - 25e-6) < 1e-12, c["cpu_per_tls_resumed_handshake"]
assert abs(c["cpu_per_match_insert"]["value"] - 95e-9) < 1e-15 and c["cpu_per_match_insert"]["kind"] == "measured"
assert abs(c["cpu_per_parse_8kb"]["value"] - 11e-6) < 1e-12
assert abs(c["cpu_per_article_prepare"]["value"] - 1.8e-6) < 1e-12
assert c["bytes_per_cached_article"]["value"] == 3000.0
assert c["host_base_bytes"]["kind"] == "derived", "derived entries are kept"
pts = m["match"]["points"]
assert len(pts) == 3 and {"subscriptions": 1000000, "words": 61, "seconds": 11e-06} in pts, pts
PY
"$bin" provision --workload "$src/provisioner/models/workloads/moonshot-1m-10m.toml" \
  --nodes "$src/provisioner/models/nodes/project-machine.toml" --costs "$tmp/measured.toml" \
  >/dev/null 2>"$tmp/err" || fail "provision with the regenerated model: $(cat "$tmp/err")"
echo "cost-model e2e: ok"
