#!/usr/bin/env bash
# Runs every hostile subprocess validator in this directory against `iapcheck check` and compares the outcome with
# the expectation table below (see README.md). One line per run:
#
#   NAME[:MODE]  exit=N  SECONDS  PASS|FAIL  first line containing FAIL / VALIDATOR FAILURE
#
# Exits non-zero if any run's exit code differs from the expected one, if iapcheck exits >= 128 (killed by a
# signal: a crash), if a run exceeds the wall-clock limit (a hang), or if a fixture process outlives the run
# (the harness must kill what it started; the detached grandchild of forked_grandchild is exempt).
#
# Usage: Tests/Fixtures/hostile/run.sh [NAME[:MODE] ...]      (default: the whole table)
# Environment:
#   IAPCHECK_BIN      iapcheck binary (default .build/debug/iapcheck)
#   HOSTILE_TIMEOUT   --timeout per request (default 2)
#   HOSTILE_TIMEOUT_PASS  --timeout for the fixtures that must PASS (default 15): they run the whole case list, whose
#                     oversized-token forgeries (~1.5 MB request lines) take the debug-built reference several
#                     seconds each, so --timeout 2 would fail them for the reference's slowness, not the harness's
#   HOSTILE_WALL      wall-clock limit per run in seconds (default 120; request_log gets HOSTILE_WALL_LONG, default 600)
#   HOSTILE_AFTER     normal exchanges before a fixture misbehaves (default 30, see _relay.py)
#   HOSTILE_ARGS      extra arguments for `iapcheck check` (e.g. "--shrink-seconds 5")
#   HOSTILE_STRICT=1  also require the failure kind of the table (bad-answer, timed-out, ...)
#   HOSTILE_LOGS      directory for the full output of every run (default: a new temporary directory)
#   HOSTILE_LANES     runs at once (default 1). Most runs wait on a fixture's misbehaviour (timeouts, hangs) rather
#                     than the CPU, so CI runs 3; each lane has a pid file of its own, and lines print as runs end
set -u

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
cd "$REPO" || exit 2

IAPCHECK_BIN="${IAPCHECK_BIN:-.build/debug/iapcheck}"
case "$IAPCHECK_BIN" in /*) ;; *) IAPCHECK_BIN="$REPO/$IAPCHECK_BIN" ;; esac
export IAPCHECK_BIN
TIMEOUT="${HOSTILE_TIMEOUT:-2}"
TIMEOUT_PASS="${HOSTILE_TIMEOUT_PASS:-15}"
WALL="${HOSTILE_WALL:-120}"
WALL_LONG="${HOSTILE_WALL_LONG:-600}"
LOGS="${HOSTILE_LOGS:-$(mktemp -d "${TMPDIR:-/tmp}/hostile-logs.XXXXXX")}"
mkdir -p "$LOGS"
LANES="${HOSTILE_LANES:-1}"
case "$LANES" in ''|*[!0-9]*|0) echo "run.sh: HOSTILE_LANES must be a whole number of at least 1, not '$LANES'" >&2; exit 2 ;; esac

if [ ! -x "$IAPCHECK_BIN" ]; then
    echo "run.sh: $IAPCHECK_BIN is not built (swift build)" >&2
    exit 2
fi

# The longest runs first, as lanes take rows in order.
# name          mode         cases  exit  kind   (exit: 0 pass, 1 discrepancy, 3 validator failure; "3,1": either;
#                                              kind: the word after VALIDATOR FAILURE, "a,b": either)
TABLE='
request_log       -            2000  0   -
forked_grandchild -            60    3   crashed
dup_products      -            60    3   bad-answer
dup_groups        -            60    3   bad-answer
dup_consumables   -            60    3   bad-answer
wrong_types       active       60    3   bad-answer
wrong_types       expiresDate  60    3   bad-answer
wrong_types       balance      60    3   bad-answer
wrong_types       products     60    3   bad-answer
unknown_state     -            60    3   bad-answer
huge_numbers      expires      60    3   bad-answer
huge_numbers      balance      60    3   bad-answer
huge_numbers      negid        60    3   protocol-violation
huge_numbers      int64min     60    3,1 bad-answer
huge_line         -            60    3   bad-answer
half_line         -            60    3   timed-out
binary_garbage    -            60    3   bad-answer
stderr_flood      -            60    0   -
wrong_id          -            60    3   protocol-violation
exit_midrun       -            60    3   crashed
closed_stdout     -            60    3   crashed,timed-out
slow_drip         -            60    3   timed-out
error_reply       -            60    3   protocol-violation
'

# Kills, by pid, the fixture processes recorded in the pid file that are still alive (checking the pid still
# belongs to a fixture or to its `iapcheck serve`). Prints "pid:cmd" for each one it found.
reap() {
    local pid cmd state what
    sort -u "$HOSTILE_PIDFILE" | while read -r pid; do
        [ -n "$pid" ] || continue
        state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)"
        [ -n "$state" ] && [ "$state" != "Z" ] || continue
        cmd="$( { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null)"
        case "$cmd" in
            *Tests/Fixtures/hostile/*) what="$(basename "$(echo "$cmd" | grep -o 'Tests/Fixtures/hostile/[A-Za-z_]*\.py')")" ;;
            *iapcheck*serve*) what="serve" ;;
            *) continue ;;
        esac
        # The detached grandchild of forked_grandchild.py leads its own session (setsid).
        [ "$(awk '{print $6}' "/proc/$pid/stat" 2>/dev/null)" = "$pid" ] && what="$what,detached"
        kill -KILL "$pid" 2>/dev/null && echo "$pid($what)"
    done
    : > "$HOSTILE_PIDFILE"
}

selected() {
    [ ${#SELECT[@]} -eq 0 ] && return 0
    local want
    for want in "${SELECT[@]}"; do
        [ "$want" = "$1" ] || [ "$want" = "$1:$2" ] && return 0
    done
    return 1
}

SELECT=("$@")
rows=()
while read -r name mode cases want_exit want_kind; do
    [ -n "$name" ] || continue
    selected "$name" "$mode" || continue
    rows+=("$name $mode $cases $want_exit $want_kind")
done <<< "$TABLE"
runs=${#rows[@]}

# One run of the table: iapcheck against the fixture, its line printed when it ends, a failed.LABEL file if it failed.
run_one() {
    local name=$1 mode=$2 cases=$3 want_exit=$4 want_kind=$5
    local label wall tmo log start end secs line verdict notes rc leftovers env_mode
    label="$name"; [ "$mode" != "-" ] && label="$name:$mode"
    wall="$WALL"; [ "$cases" -gt 500 ] && wall="$WALL_LONG"
    tmo="$TIMEOUT"; [ "$want_exit" = 0 ] && tmo="$TIMEOUT_PASS"
    log="$LOGS/${label/:/-}.log"
    : > "$HOSTILE_PIDFILE"
    env_mode=(); [ "$mode" != "-" ] && env_mode=(HOSTILE_MODE="$mode")
    start=$(date +%s.%N)
    # At the wall clock: SIGINT first (iapcheck reports what it has), SIGKILL 10 s later.
    # (The braces' 2>/dev/null silences bash's "Killed" job message.)
    # shellcheck disable=SC2086
    { env "${env_mode[@]}" timeout -s INT -k 10 "$wall" "$IAPCHECK_BIN" check \
        --validator "exec:python3 Tests/Fixtures/hostile/$name.py" \
        --cases "$cases" --timeout "$tmo" --no-corpus --quiet ${HOSTILE_ARGS:-} > "$log" 2>&1 < /dev/null
      rc=$?; } 2>/dev/null
    end=$(date +%s.%N)
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    line="$(grep -a -m1 -E 'FAIL|VALIDATOR FAILURE' "$log" | tr -d '\000-\010\013-\037' | cut -c1-200)"
    [ -n "$line" ] || line="$(grep -a -v '^[[:space:]]*$' "$log" | tail -n1 | tr -d '\000-\010\013-\037' | cut -c1-200)"

    verdict=PASS
    notes=""
    if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && awk -v s="$secs" -v w="$wall" 'BEGIN { exit !(s >= w) }'; }; then
        verdict=FAIL; notes="$notes [wall clock ${wall}s exceeded: hang]"
    elif [ "$rc" -ge 128 ]; then
        verdict=FAIL; notes="$notes [iapcheck killed by signal $((rc - 128)): crash]"
    elif ! [[ ",$want_exit," == *",$rc,"* ]]; then
        verdict=FAIL; notes="$notes [expected exit $want_exit]"
    fi
    if [ "$rc" -eq 3 ] && [ "$want_kind" != "-" ] && ! grep -a -q -E "VALIDATOR FAILURE (${want_kind//,/|})" "$log"; then
        if [ "${HOSTILE_STRICT:-0}" = 1 ]; then verdict=FAIL; fi
        notes="$notes [expected kind $want_kind]"
    fi
    sleep 1  # let killed processes go
    # What is still running, counted by kind ("3×half_line.py 1×serve"), killed by pid.
    leftovers="$(reap | sed 's/^[0-9]*(\(.*\))$/\1/' | sort | uniq -c | awk '{ printf "%s%d×%s", (NR > 1 ? " " : ""), $1, $2 }')"
    if [ -n "$leftovers" ]; then
        if [ "$name" = forked_grandchild ] && [ -z "$(echo "$leftovers" | tr ' ' '\n' | grep -v -E '^[0-9]+×forked_grandchild\.py,detached$')" ]; then
            notes="$notes [detached grandchildren left running (allowed), killed: $leftovers]"
        else
            verdict=FAIL; notes="$notes [LEFTOVER processes, killed: $leftovers]"
        fi
    fi
    [ "$verdict" = FAIL ] && : > "$LOGS/failed.$label"
    printf '%-28s exit=%-3s %7ss  %-5s %s%s\n' "$label" "$rc" "$secs" "$verdict" "$line" "$notes"
}

# A lane: takes the next row of the queue (a counter under flock) until none is left; its own pid file.
lane() {
    export HOSTILE_PIDFILE="$LOGS/pids.$1"
    : > "$HOSTILE_PIDFILE"
    local i
    while true; do
        i=$( { flock 8; i=$(cat "$LOGS/queue"); echo $((i + 1)) > "$LOGS/queue"; echo "$i"; } 8> "$LOGS/queue.lock")
        [ "$i" -lt "$runs" ] || break
        # shellcheck disable=SC2086
        run_one ${rows[$i]}
    done
}

printf '%-28s %-8s %8s  %-5s %s\n' "fixture" "exit" "seconds" "" "first FAIL / VALIDATOR FAILURE line"
echo 0 > "$LOGS/queue"
rm -f "$LOGS"/failed.*
lanes=()
for l in $(seq 1 "$LANES"); do lane "$l" & lanes+=($!); done
wait "${lanes[@]}"
failures=$(find "$LOGS" -maxdepth 1 -name 'failed.*' | wc -l)

for l in $(seq 1 "$LANES"); do HOSTILE_PIDFILE="$LOGS/pids.$l" reap > /dev/null; done
for want in "${SELECT[@]}"; do
    echo "$TABLE" | awk -v w="$want" '$1 == w || $1 ":" $2 == w { found = 1 } END { exit !found }' \
        || echo "run.sh: no fixture $want in the table (ignored)" >&2
done
echo "$runs runs, $failures failed; full output in $LOGS"
[ "$runs" -gt 0 ] || { echo "run.sh: no fixture matches $*" >&2; exit 2; }
[ "$failures" -eq 0 ]
