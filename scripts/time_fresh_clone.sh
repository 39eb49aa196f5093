#!/usr/bin/env bash
# Time the README's two commands in a fresh clone, as a new user runs them (and as CI runs the
# second: CI=true, two pytest-xdist workers), and record the result in docs/bench/smoke.json
# (read by `python -m benchmarks record`).
#
#   scripts/time_fresh_clone.sh            clone HEAD (committed work only) into a temporary folder
#
# The clone bootstraps its own .venv first, timed apart (pip's download cache is reused if present:
# say so when you quote the numbers), so that reproduce_s is the seven notebooks alone.  Where this
# checkout has ../shared beside it, the clone gets it too (a link), as CI does, so that the tests
# that read the authors' data samples run.  Nothing in this checkout changes except docs/bench/smoke.json (and the
# clone's logs, kept in runs/fresh-clone-logs/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
commit="$(git rev-parse HEAD)"
work="$(mktemp -d)"
logs="$root/runs/fresh-clone-logs"  # the clone's env, reproduce and test logs are kept here (runs/ is ignored by git)
mkdir -p "$logs"
trap 'cp "$work"/*.log "$logs"/ 2>/dev/null; rm -rf "$work"' EXIT
git clone --quiet "$root" "$work/fresh"
[ -d "$root/../shared" ] && ln -s "$(cd "$root/../shared" && pwd)" "$work/shared"
cd "$work/fresh"

te=$(date +%s)
bash -c 'source scripts/env.sh' > "$work/env.log" 2>&1 || { tail -40 "$work/env.log"; echo "creating the environment failed" >&2; exit 1; }
t0=$(date +%s)
./reproduce.sh > "$work/reproduce.log" 2>&1 || { tail -40 "$work/reproduce.log"; echo "reproduce.sh failed" >&2; exit 1; }
t1=$(date +%s)
set +e
CI=true ./test.sh -q > "$work/test.log" 2>&1
test_rc=$?
set -e
t2=$(date +%s)
tail -5 "$work/test.log"
summary="$(grep -E '^[=]* ?[0-9]+ (passed|failed)' "$work/test.log" | tail -1 || true)"

CS_WORK="$work" python3 - "$root/docs/bench/smoke.json" "$commit" "$((t1 - t0))" "$((t2 - t1))" "$test_rc" "$summary" "$(nproc)" "$((t0 - te))" <<'PY'
import json, os, re, sys, tempfile, time
path, commit, rep, tst, rc, summary, cores, env = sys.argv[1:9]
count = lambda word: int(m.group(1)) if (m := re.search(rf"(\d+) {word}", summary)) else 0
reproduce_log = open(os.path.join(os.environ["CS_WORK"], "reproduce.log"), encoding="utf-8", errors="replace").read()
record = {
    "commit": commit,
    "date": time.strftime("%Y-%m-%d"),
    "machine": f"{cores} CPU cores",
    "env_s": int(env),
    "reproduce_s": int(rep),
    "test_workers": 2,
    "test_s": int(tst),
    "test_exit_code": int(rc),
    "tests_passed": count("passed"),
    "tests_failed": count("failed") + count("error"),
    "tests_skipped": count("skipped"),
    "pytest_summary": summary.strip("= "),
    # each notebook's seconds, from reproduce.sh's end lines "[i/n] NN done in S s" (README and docs/teaching.md)
    "notebooks_s": {m.group(1): int(m.group(2)) for m in re.finditer(r"^\[\d+/\d+\] (\d\d) done in (\d+) s", reproduce_log, re.M)},
    "how": "scripts/time_fresh_clone.sh: git clone, creating .venv (env_s), then ./reproduce.sh (reproduce_s) and CI=true ./test.sh -q (test_s, 2 xdist workers, as CI), each timed with date +%s (pip download cache reused when present)",
}
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".partial")
with os.fdopen(fd, "w") as fh:
    json.dump(record, fh, indent=2)
    fh.write("\n")
os.replace(tmp, path)
print(json.dumps(record, indent=2))
PY
exit "$test_rc"
