#!/usr/bin/env bash
# Signed cases per CPU-second of two iapcheck builds, measured in the same moments of the machine: both run
# `check --no-corpus --cases N` pinned to the same core, so the kernel alternates them every few milliseconds and a
# drift of the machine's speed falls on both alike. The slower build runs once per round while the faster one runs
# again and again beside it (only runs that end while the slower one still runs count); each build is charged the
# CPU time it used, and a round's ratio is the slower build's CPU seconds over the mean of the faster one's. The CPU
# time includes each process's start (the PKI, the catalog), which favours the slower build slightly.
#
#   [SLOW_OPTIONS=...] [FAST_OPTIONS=...] [CORE=1] Benchmarks/compare-builds.sh SLOW_BINARY FAST_BINARY [ROUNDS [CASES]]
#
# CORE: the core both builds are pinned to (default 1; 0 on a one-core machine). SLOW_OPTIONS and FAST_OPTIONS are
# more `check` options for one build (`FAST_OPTIONS='--max-size 8'`, say; the two builds may be one binary);
# `--jobs 1` is added for a build whose `check --help` has it. Needs taskset (util-linux) and python3. Exits 1 when a
# build fails (printing the end of its output) or no round gives a ratio.
#
# (Running the two builds at once on two cores, as this script did first, gave ratios from 2.2 to 4.4 for one pair
# of builds in one session: the two cores of a shared machine do not run at one speed. On one core: 3.03 to 3.14.)
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,14p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
for b in "$1" "$2"; do [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }; done
exec python3 - "$1" "$2" "${3:-4}" "${4:-1000}" "${CORE:-1}" "${SLOW_OPTIONS:-}" "${FAST_OPTIONS:-}" <<'PY'
import os, shlex, statistics, subprocess, sys, tempfile

slow, fast, rounds, cases, core, slow_options, fast_options = sys.argv[1:]

def command(binary, options):
    help_text = subprocess.run([binary, "check", "--help"], capture_output=True, text=True).stdout
    jobs = ["--jobs", "1"] if "--jobs" in help_text else []
    return ["taskset", "-c", core, binary, "check", "--no-corpus", "--cases", cases] + jobs + shlex.split(options)

commands = {"slow": command(slow, slow_options), "fast": command(fast, fast_options)}
logs = {role: tempfile.NamedTemporaryFile(prefix=f"compare-builds-{role}-") for role in commands}

def start(role):
    # posix_spawn, not subprocess: a Popen object dropped while its child runs is reaped behind our back later.
    out = logs[role].name
    actions = [(os.POSIX_SPAWN_OPEN, 1, out, os.O_WRONLY | os.O_TRUNC, 0), (os.POSIX_SPAWN_DUP2, 1, 2)]
    return os.posix_spawnp(commands[role][0], commands[role], os.environ, file_actions=actions)

def fail(round_number, role, status, other_pid=None):
    if other_pid is not None:
        os.kill(other_pid, 15)
        os.waitpid(other_pid, 0)
    with open(logs[role].name, errors="replace") as f:
        tail = f.read()[-2000:]
    sys.exit(f"round {round_number}: the {role} build ended with {describe(status)}: {shlex.join(commands[role])}\n{tail}")

def describe(status):
    code = os.waitstatus_to_exitcode(status)
    return f"signal {-code}" if code < 0 else f"exit status {code}"

def cpu(usage):
    return usage.ru_utime + usage.ru_stime

ratios = []
for r in range(1, int(rounds) + 1):
    slow_pid, slow_cpu, fast_cpu = start("slow"), None, []
    while slow_cpu is None:
        fast_pid = start("fast")
        _, status, usage = os.wait4(fast_pid, 0)
        if status != 0:
            fail(r, "fast", status, other_pid=slow_pid)
        pid, slow_status, slow_usage = os.wait4(slow_pid, os.WNOHANG)
        if pid == slow_pid:
            if slow_status != 0:
                fail(r, "slow", slow_status)
            slow_cpu = cpu(slow_usage)
        else:
            fast_cpu.append(cpu(usage))
    if not fast_cpu:
        print(f"round {r}: the fast build finished no run while the slow one ran (give more cases)", flush=True)
        continue
    ratio = slow_cpu / statistics.mean(fast_cpu)
    ratios.append(ratio)
    print(f"round {r}: slow build {slow_cpu:.2f} CPU s; fast build {' '.join(f'{c:.2f}' for c in fast_cpu)} CPU s; "
          f"ratio {ratio:.2f}", flush=True)
if not ratios:
    sys.exit("no round gave a ratio")
print(f"median of {len(ratios)} rounds: {statistics.median(ratios):.2f} (cases per CPU-second of the fast build "
      f"over the slow one's)")
PY
