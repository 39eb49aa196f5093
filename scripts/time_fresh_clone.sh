#!/usr/bin/env bash
# Time the README's two commands in a fresh clone, as a new user runs them, and record
# the result in docs/bench/smoke.json (read by `python -m benchmarks record`).
#
#   scripts/time_fresh_clone.sh            clone HEAD (committed work only) into a temporary folder
#
# The clone bootstraps its own .venv (pip's download cache is reused if present: say so
# when you quote the numbers).  Nothing in this checkout changes except docs/bench/smoke.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
commit="$(git rev-parse HEAD)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone --quiet "$root" "$work/fresh"
cd "$work/fresh"

t0=$(date +%s)
./reproduce.sh > "$work/reproduce.log" 2>&1 || { tail -40 "$work/reproduce.log"; echo "reproduce.sh failed" >&2; exit 1; }
t1=$(date +%s)
set +e
./test.sh -q > "$work/test.log" 2>&1
test_rc=$?
set -e
t2=$(date +%s)
tail -5 "$work/test.log"
summary="$(grep -E '^[=]* ?[0-9]+ (passed|failed)' "$work/test.log" | tail -1 || true)"

python3 - "$root/docs/bench/smoke.json" "$commit" "$((t1 - t0))" "$((t2 - t1))" "$test_rc" "$summary" "$(nproc)" <<'PY'
import json, os, re, sys, tempfile, time
path, commit, rep, tst, rc, summary, cores = sys.argv[1:8]
count = lambda word: int(m.group(1)) if (m := re.search(rf"(\d+) {word}", summary)) else 0
record = {
    "commit": commit,
    "date": time.strftime("%Y-%m-%d"),
    "machine": f"{cores} CPU cores",
    "reproduce_s": int(rep),
    "test_s": int(tst),
    "test_exit_code": int(rc),
    "tests_passed": count("passed"),
    "tests_failed": count("failed") + count("error"),
    "tests_skipped": count("skipped"),
    "pytest_summary": summary.strip("= "),
    "how": "scripts/time_fresh_clone.sh: git clone, then ./reproduce.sh and ./test.sh -q, each timed with date +%s (pip download cache reused when present)",
}
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".partial")
with os.fdopen(fd, "w") as fh:
    json.dump(record, fh, indent=2)
    fh.write("\n")
os.replace(tmp, path)
print(json.dumps(record, indent=2))
PY
exit "$test_rc"
