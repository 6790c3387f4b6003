#!/usr/bin/env bash
# Restart time with list snapshots against re-matching the whole article log (issue 11):
# on the data of a finished `feedplane load --out DIR` run, times a start to /readyz 200
# (bench/restart_cpu.sh), and alternates with the same start with DIR/data/lists moved away
# (the lists re-matched from the log), ROUNDS times.
#   bench/restart_snapshots.sh FEEDPLANE DIR [ROUNDS]
set -euo pipefail
bin=$1 d=$2 rounds=${3:-5}
here=$(dirname "$0")
trap '[ -d "$d/data/lists.off" ] && { rm -rf "$d/data/lists"; mv "$d/data/lists.off" "$d/data/lists"; }' EXIT
for _ in $(seq "$rounds"); do
  echo "snapshots: $("$here/restart_cpu.sh" "$bin" "$d")"
  mv "$d/data/lists" "$d/data/lists.off"
  echo "log-only: $("$here/restart_cpu.sh" "$bin" "$d")"
  rm -rf "$d/data/lists"
  mv "$d/data/lists.off" "$d/data/lists"
done
