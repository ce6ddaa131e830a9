#!/usr/bin/env bash
# The baseline gate on the node-service fixture, end to end (see README.md beside this file):
#   a. check --keep-going 10 --write-baseline   on the service as is      -> exit 1 (the known divergence), baseline written
#   b. check --baseline                         on the service as is      -> exit 0, the divergence listed as accepted
#   c. check --baseline   with PLANTED_BUG=no-grace                       -> exit 1, only the new signature is a FAIL
#   d. check --baseline   with FIXED=1                                    -> exit 0, the entry named as not met
# Exits non-zero when a step's exit code or expected text is not as stated.
#
#   IAPCHECK=/path/to/iapcheck CASES=300 Tests/Fixtures/node-service/gate-demo.sh
#
# Every step passes --keep-going 10 (written when `check --baseline` without it stopped at the first accepted
# failure; fixed since, see README.md). --shrink-seconds 600 keeps shrinking bound by attempts (deterministic) rather
# than by time, so a slow machine shrinks to the same case and signature as a fast one.
set -u
cd "$(dirname "$0")/../../.." || exit 2 # the iapcheck checkout: the target's start command uses paths relative to it

IAPCHECK=${IAPCHECK:-/tmp/w/helperbin/iapcheck}
CASES=${CASES:-300}
TARGET=Tests/Fixtures/node-service/target.json
tmp=$(mktemp -d /tmp/node-service-gate.XXXXXX)
baseline=$tmp/baseline.json
failed=0

cleanup() { # the {tmp} folders iapcheck keeps after a failing run (it prints them); our own scratch folder stays
  grep -ho "kept the backend's folder ({tmp}): /tmp/iapcheck-backend-[0-9-]*" "$tmp"/*.out 2>/dev/null |
    sed 's/.*: //' | sort -u | while read -r d; do rm -rf -- "$d"; done
}
trap cleanup EXIT

common=(--validator "http:$TARGET" --cases "$CASES" --corpus "$tmp/corpus" --shrink-seconds 600)

# run NAME ENV... -- ARGS...: runs iapcheck check, keeps its output in $tmp/NAME.out and its summary in $tmp/NAME.json,
# prints the verdict lines, the exit code and the time taken; sets $rc.
run() {
  local name=$1 envs=()
  shift
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "\$ ${envs[*]:+${envs[*]} }iapcheck check ${common[*]} $*"
  local t0=$(date +%s%N)
  env "${envs[@]}" "$IAPCHECK" check "${common[@]}" --json "$tmp/$name.json" "$@" >"$tmp/$name.out" 2>&1
  rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  grep -E "^(FAIL |  same bug in|accepted divergences|  - |  not met in this run|INTERRUPTED|baseline:|stopped after|[0-9]+ more failing|http:127)" \
    "$tmp/$name.out" | sed 's/^/    /'
  printf '    -> exit %s in %d.%01d s\n' "$rc" $((ms / 1000)) $((ms % 1000 / 100))
  timings+=("$name: exit $rc, $((ms / 1000)).$((ms % 1000 / 100)) s")
}

# expect STEP CONDITION-DESCRIPTION COMMAND...: records a failed expectation.
expect() {
  local step=$1 what=$2
  shift 2
  if "$@"; then echo "    ok: $what"; else echo "    NOT AS EXPECTED ($step): $what"; failed=1; fi
}

# Python checks on a step's --json summary and the baseline: py STEP 'expression over s (summary) and b (baseline)'.
py() {
  python3 - "$tmp/$1.json" "$baseline" "$2" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
texts = {e["text"] for e in b["entries"]}
sys.exit(0 if eval(sys.argv[3]) else 1)
EOF
}

timings=()
echo "iapcheck: $IAPCHECK ($("$IAPCHECK" --version)); scratch folder: $tmp"
echo

echo "== a. the service as is: record its divergences"
run a -- --keep-going 10 --write-baseline "$baseline"
expect a "exit 1 (the known divergence fails the default check)" test "$rc" = 1
expect a "a baseline was written" test -s "$baseline"
expect a "every entry is the known divergence (after REFUND_REVERSED)" python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))
sys.exit(0 if b["entries"] and all(e["signature"]["event"] == "REFUND_REVERSED" for e in b["entries"]) else 1)' "$baseline"
python3 - "$baseline" <<'EOF'
import json, sys
b = json.load(open(sys.argv[1]))
for e in b["entries"]:
    e["reason"] = ("PAY-311: a reversed refund is re-granted by support, not by the service; "
                   "the purchase stays revoked until another version of it arrives. Fix planned for Q3.")
json.dump(b, open(sys.argv[1], "w"), indent=2)
EOF
echo "    the baseline, reasons filled in:"
sed 's/^/      /' "$baseline"
echo

echo "== b. the service as is, gated by the baseline"
run b -- --keep-going 10 --baseline "$baseline"
expect b "exit 0" test "$rc" = 0
expect b "no FAIL" bash -c "! grep -q '^FAIL ' '$tmp/b.out'"
expect b "the accepted divergence is listed with its reason" grep -q "^accepted divergences ($baseline): [1-9][0-9]* met" "$tmp/b.out"
expect b "  ... and its reason" grep -q "PAY-311: a reversed refund is re-granted by support" "$tmp/b.out"
expect b "summary: accepted, no discrepancy" py b 's["accepted"] and not s["discrepancies"] and {a["signature"] for a in s["accepted"]} <= texts'
echo

echo "== c. a new bug (PLANTED_BUG=no-grace), gated by the baseline"
cp -r "$tmp/corpus" "$tmp/corpus-c" 2>/dev/null || mkdir -p "$tmp/corpus-c"
common_saved=("${common[@]}")
common=(--validator "http:$TARGET" --cases "$CASES" --corpus "$tmp/corpus-c" --shrink-seconds 600) # the bug's branch
run c PLANTED_BUG=no-grace -- --keep-going 10 --baseline "$baseline"
common=("${common_saved[@]}")
expect c "exit 1" test "$rc" = 1
expect c "every FAIL is a new signature, none of the baseline's" py c 's["discrepancies"] and all(d["signature"] not in texts for d in s["discrepancies"])'
expect c "FAIL lines: one per new signature" test "$(grep -c '^FAIL ' "$tmp/c.out")" = "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["discrepancies"]))' "$tmp/c.json")"
expect c "the known divergence is listed as accepted, not as FAIL" grep -q "^accepted divergences ($baseline): [1-9][0-9]* met" "$tmp/c.out"
expect c "the new signature is the grace period's" py c 'any("DID_FAIL_TO_RENEW/GRACE_PERIOD" in d["signature"] for d in s["discrepancies"])'
echo

echo "== d. the known divergence fixed (FIXED=1), gated by the baseline"
run d FIXED=1 -- --keep-going 10 --baseline "$baseline"
expect d "exit 0" test "$rc" = 0
expect d "no FAIL" bash -c "! grep -q '^FAIL ' '$tmp/d.out'"
expect d "every entry named as not met (fixed, or not reached)" py d 'not s["accepted"] and len(s["baselineNotSeen"]) == len(b["entries"])'
expect d "  ... in the text" test "$(grep -c "^  not met in this run: .* — fixed, or not reached by these cases" "$tmp/d.out")" = "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["entries"]))' "$baseline")"
echo

echo "== times"
printf '    %s\n' "${timings[@]}"
if [ "$failed" = 0 ]; then echo "gate demo: every step as expected"; else echo "gate demo: NOT AS EXPECTED (outputs in $tmp)"; fi
exit "$failed"
