#!/usr/bin/env bash
# Time `./reproduce.sh` (smoke profile) inline against `--executor local --workers N`, interleaved
# (inline, local, inline, local, ...) so a drift in the machine's load hits both alike, each run
# from an empty output root (a cold run cache), and check that both give byte-identical CSVs.
#
#   scripts/bench_executors.sh [PAIRS] [WORKERS]      # default 2 pairs, 2 workers
#
# Prints one line per run (wall seconds from start to exit, and the 1-minute load average at
# its start and end: quote the load with the numbers), the medians, and writes
# docs/bench/executors_smoke.json.  Outputs go to a temporary folder, removed at the end.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
pairs="${1:-2}"
workers="${2:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source scripts/env.sh >/dev/null

results="$work/results.tsv"
: > "$results"
for i in $(seq 1 "$pairs"); do
  for kind in inline local; do
    out="$work/$kind"
    rm -rf "$out"
    args=()
    [ "$kind" = local ] && args=(--executor local --workers "$workers")
    load0="$(cut -d' ' -f1 /proc/loadavg)"
    t0=$(date +%s.%N)
    CODESWITCH_OUTPUT_ROOT="$out" ./reproduce.sh "${args[@]}" > "$work/$kind.log" 2>&1 \
      || { tail -30 "$work/$kind.log"; echo "reproduce.sh ($kind) failed" >&2; exit 1; }
    t1=$(date +%s.%N)
    load1="$(cut -d' ' -f1 /proc/loadavg)"
    wall="$(python3 -c "print(round($t1 - $t0, 1))")"
    echo "pair $i $kind: ${wall} s (load ${load0} -> ${load1})"
    printf '%s\t%s\t%s\t%s\n' "$kind" "$wall" "$load0" "$load1" >> "$results"
  done
  # the two runs of this pair: every CSV byte-identical
  n=0
  for f in "$work/inline/figures/smoke/"*.csv; do
    cmp -s "$f" "$work/local/figures/smoke/$(basename "$f")" || { echo "DIFFERENT: $(basename "$f")" >&2; exit 1; }
    n=$((n + 1))
  done
  echo "pair $i: $n CSVs byte-identical"
done

python3 - "$results" "$root/docs/bench/executors_smoke.json" "$(git rev-parse HEAD)" "$(nproc)" "$workers" "$n" <<'PY'
import json, os, statistics, sys, tempfile, time

rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
runs = {k: [float(w) for kind, w, *_ in rows if kind == k] for k in ("inline", "local")}
out = {
    "commit": sys.argv[3], "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": int(sys.argv[4]),
    "workers": int(sys.argv[5]), "csvs_identical": int(sys.argv[6]),
    "runs": [{"kind": k, "wall_s": float(w), "load_start": float(a), "load_end": float(b)} for k, w, a, b in rows],
    "median_s": {k: statistics.median(v) for k, v in runs.items()},
    "how": "scripts/bench_executors.sh: ./reproduce.sh (smoke) inline and --executor local, interleaved, each from an empty "
           "output root; wall seconds from start to exit; 1-minute load average at start and end",
}
out["ratio_local_over_inline"] = round(out["median_s"]["local"] / out["median_s"]["inline"], 3)
print(f"median: inline {out['median_s']['inline']} s, local {out['median_s']['local']} s, ratio {out['ratio_local_over_inline']}")
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(sys.argv[2]))
with os.fdopen(fd, "w") as f:
    json.dump(out, f, indent=2)
    f.write("\n")
os.replace(tmp, sys.argv[2])
PY
