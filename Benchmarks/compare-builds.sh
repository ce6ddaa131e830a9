#!/usr/bin/env bash
# Signed cases/s of two iapcheck builds measured in the same moments of the machine: the slower build runs
# `check --no-corpus --cases N` once on one core while the faster runs the same command again and again on the other
# (only runs that end while the slower one still runs count); the cores swap every round. On a shared machine whose
# speed drifts within seconds, runs taken one after the other compare two speeds of the machine, not two builds.
#
#   [SLOW_OPTIONS=...] [FAST_OPTIONS=...] Benchmarks/compare-builds.sh SLOW_BINARY FAST_BINARY [ROUNDS [CASES]]
#
# Needs two cores and taskset (util-linux). SLOW_OPTIONS and FAST_OPTIONS are more `check` options for one build
# (`FAST_OPTIONS='--max-size 8'`, say); `--jobs 1` is added for a build whose `check --help` has it.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,10p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
slow=$1 fast=$2 rounds=${3:-4} cases=${4:-1000}
read -r -a slow_options <<< "${SLOW_OPTIONS:-}"
read -r -a fast_options <<< "${FAST_OPTIONS:-}"
for b in "$slow" "$fast"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
jobs_flag() { if "$1" check --help 2>&1 | grep -q -- '--jobs'; then echo --jobs 1; fi; }
rate() { grep -o '([0-9]* cases/s)' "$1" | tr -dc 0-9 || true; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then cs=0 cf=1; else cs=1 cf=0; fi
  # shellcheck disable=SC2046
  taskset -c $cs "$slow" check --no-corpus --cases "$cases" $(jobs_flag "$slow") "${slow_options[@]}" > "$work/slow" 2>&1 &
  pid=$!
  fast_rates=()
  while kill -0 $pid 2>/dev/null; do
    # shellcheck disable=SC2046
    taskset -c $cf "$fast" check --no-corpus --cases "$cases" $(jobs_flag "$fast") "${fast_options[@]}" > "$work/fast" 2>&1 || true
    kill -0 $pid 2>/dev/null || break
    fast_rates+=("$(rate "$work/fast")")
  done
  wait $pid || true
  s=$(rate "$work/slow")
  [ -n "$s" ] || { echo "round $r: the slow build gave no cases/s: $(tail -1 "$work/slow")"; continue; }
  [ ${#fast_rates[@]} -gt 0 ] || { echo "round $r: the fast build finished no run while the slow one ran (give more cases)"; continue; }
  python3 - "$r" "$cs" "$cf" "$s" "${fast_rates[@]}" <<'PY'
import statistics, sys
r, cs, cf, slow, *fast = sys.argv[1:]
mean = statistics.mean(int(x) for x in fast)
print(f"round {r}: slow build {slow} cases/s (core {cs}); fast build {' '.join(fast)} cases/s (core {cf}), "
      f"mean {mean:.0f}; ratio {mean / int(slow):.2f}")
PY
done
