"""Shared relay loop for the hostile subprocess validators (standard library only).

A hostile fixture is a real validator with one misbehaviour: it starts the reference validator
(`$IAPCHECK_BIN serve`, default `.build/debug/iapcheck`) as a child, forwards every request line the harness
sends, reads the child's reply line and hands both to the fixture's `perturb` function, which decides what the
harness actually gets (the reply untouched, a modified reply, garbage, nothing, a delay, an exit, ...).

Trigger: a fixture misbehaves only from a trigger point, so that the harness first sees normal traffic.
`HOSTILE_AFTER` (default 30) is the number of normal exchanges before it: `ctx.request_trigger()` is true from
request number HOSTILE_AFTER+1 on (the `hello` is request 1), `ctx.query_trigger()` is true for every `query`
after HOSTILE_AFTER queries. Counters are per process: the harness restarts a dead validator at the next `reset`,
and the new process behaves normally again for HOSTILE_AFTER exchanges.

Environment:
  IAPCHECK_BIN       the iapcheck binary (default .build/debug/iapcheck, relative to the working directory or,
                     failing that, to the repository containing this file)
  IAPCHECK_SERVE     extra arguments for `serve` (default: none, i.e. `--validator reference`)
  HOSTILE_AFTER      normal exchanges before the misbehaviour (default 30)
  HOSTILE_MODE       variant of the misbehaviour, for fixtures that have several (see each fixture)
  HOSTILE_SLEEP      how long "forever" is, in seconds (default 600), so nothing outlives a broken harness long
  HOSTILE_PIDFILE    if set, every process a fixture starts appends its pid here (run.sh kills leftovers by pid)
"""
import copy
import json
import os
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

AFTER = int(os.environ.get("HOSTILE_AFTER", "30"))
MODE = os.environ.get("HOSTILE_MODE", "")
SLEEP = float(os.environ.get("HOSTILE_SLEEP", "600"))
PIDFILE = os.environ.get("HOSTILE_PIDFILE")

OUT = 1  # stdout, written with os.write: no Python buffering, partial writes handled, BrokenPipe caught
ERR = 2


def record_pid(pid=None):
    """Appends a pid to $HOSTILE_PIDFILE (if set), so a runner can clean up by pid."""
    if not PIDFILE:
        return
    try:
        with open(PIDFILE, "a") as f:
            f.write("%d\n" % (pid or os.getpid()))
    except OSError:
        pass


def binary():
    b = os.environ.get("IAPCHECK_BIN", ".build/debug/iapcheck")
    if not os.path.isabs(b) and not os.path.exists(b) and os.path.exists(os.path.join(REPO, b)):
        b = os.path.join(REPO, b)
    return b


def quiet_exit(status=0):
    """Exit without Python complaining about a closed stdout (the harness may have killed the pipe)."""
    try:
        sys.stderr.flush()
    except Exception:
        pass
    os._exit(status)


def write_all(fd, data):
    """Writes every byte (os.write may write part of a large buffer). Raises BrokenPipeError/OSError."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def sleep_forever():
    """'Forever', bounded by HOSTILE_SLEEP so a harness that never kills us does not leak us for long."""
    end = time.monotonic() + SLEEP
    while True:
        left = end - time.monotonic()
        if left <= 0:
            quiet_exit(0)
        time.sleep(min(left, 5))


class Context:
    """What a fixture's `perturb` sees: counters, the trigger, and the child."""

    def __init__(self, child):
        self.child = child
        self.requests = 0   # requests received so far, including this one (hello is 1)
        self.queries = 0    # queries received so far, including this one
        self.request = None  # the current request, decoded (None if it was not JSON)
        self.fired = 0      # how many times the fixture said it misbehaved (ctx.fire())
        self.after = AFTER
        self.mode = MODE

    @property
    def type(self):
        return self.request.get("type") if isinstance(self.request, dict) else None

    def request_trigger(self):
        """True from request number AFTER+1 on."""
        return self.requests > self.after

    def query_trigger(self):
        """True for a query once AFTER queries have been answered normally."""
        return self.type == "query" and self.queries > self.after

    def fire(self):
        self.fired += 1

    def write(self, data):
        """Writes raw bytes to the harness; a closed pipe (the harness killed us or closed it) ends quietly."""
        try:
            write_all(OUT, data)
        except (BrokenPipeError, OSError):
            self.shutdown()
            quiet_exit(0)

    def shutdown(self):
        """Stops the child (it also stops by itself on EOF when we die)."""
        try:
            self.child.stdin.close()
        except Exception:
            pass
        try:
            self.child.kill()
        except Exception:
            pass


def decode(line):
    try:
        return json.loads(line)
    except ValueError:
        return None


def encode(obj):
    """A reply object as one line, the way the reference writes it (compact, sorted keys)."""
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode() + b"\n"


def start_child():
    cmd = [binary(), "serve"] + shlex.split(os.environ.get("IAPCHECK_SERVE", ""))
    try:
        child = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    except OSError as e:
        os.write(ERR, ("hostile relay: cannot start %s: %s\n" % (cmd, e)).encode())
        quiet_exit(70)
    record_pid(child.pid)
    return child


def run(perturb):
    """The relay loop. `perturb(ctx, reply_line) -> bytes | None` gets the request in ctx.request and the child's
    reply line (bytes, with its newline); what it returns is written to the harness (None: nothing). It may also
    sleep, exit or write by itself with ctx.write."""
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a closed pipe is an EPIPE exception, not a silent kill
    record_pid()
    child = start_child()
    ctx = Context(child)
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:  # the harness closed our stdin: stop like a well-behaved validator
            ctx.shutdown()
            child.wait()
            quiet_exit(0)
        if not line.endswith(b"\n"):
            line += b"\n"
        if not line.strip():
            continue
        ctx.requests += 1
        ctx.request = decode(line)
        if ctx.type == "query":
            ctx.queries += 1
        try:
            child.stdin.write(line)
            child.stdin.flush()
        except (BrokenPipeError, OSError):
            os.write(ERR, b"hostile relay: the reference validator is gone\n")
            quiet_exit(71)
        reply = child.stdout.readline()
        if not reply:
            os.write(ERR, b"hostile relay: the reference validator exited\n")
            quiet_exit(72)
        out = perturb(ctx, reply)
        if out is not None:
            ctx.write(out)


def passthrough(ctx, reply):
    return reply


def edit_answer(edit):
    """A `perturb` for fixtures that change the `answer` of a query: `edit(ctx, reply_obj)` mutates a decoded
    `answer` reply in place and returns True if it could apply (otherwise the reply goes out untouched and the
    fixture tries again at the next query)."""

    def perturb(ctx, reply):
        if not ctx.query_trigger():
            return reply
        obj = decode(reply)
        if not isinstance(obj, dict) or obj.get("type") != "answer" or not isinstance(obj.get("answer"), dict):
            return reply
        obj = copy.deepcopy(obj)
        if not edit(ctx, obj):
            return reply
        ctx.fire()
        return encode(obj)

    return perturb


def log(msg):
    """A line on stderr (what a real service would log); never fails."""
    try:
        write_all(ERR, (msg.rstrip("\n") + "\n").encode())
    except OSError:
        pass
