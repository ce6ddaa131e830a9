#!/usr/bin/env bash
# Fuzz one of iapcheck's readers of outside input with libFuzzer (and AddressSanitizer).
#
#   Fuzz/run.sh TARGET [SECONDS]     targets: verifier, reply, readers, http (default 60 s)
#   Fuzz/run.sh build                only build the fuzzer (CI builds it beside other work, then fuzzes)
#
# Leak detection is off: LeakSanitizer reports Swift objects held by globals (the test PKI, the chain cache) as
# leaked, a false positive on the first input; runaway memory is still caught by -rss_limit_mb.
# The build goes to .build-fuzz, or to the folder IAPCHECK_FUZZ_SCRATCH names: CI names the debug build's .build once
# it needs the plain build no more, so that its C objects (swift-crypto's BoringSSL, compiled the same way) are reused
# and only the Swift modules are compiled again, with the sanitizers; a plain `swift build` there afterwards compiles
# them again without.
# Seeds from Fuzz/corpus/TARGET (left unchanged: new inputs go to a temporary directory, printed at the end). A
# crash, leak or timeout is written to Fuzz/crashes/TARGET/ and the script exits non-zero; commit the file there and
# it becomes a regression input that CI replays (`swift run iapcheck-fuzz TARGET Fuzz/crashes/TARGET`).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: Fuzz/run.sh TARGET [SECONDS]  (targets: verifier, reply, readers, http)}
seconds=${2:-60}
case "$target" in
  verifier|reply|readers|http|build) ;;
  *) echo "unknown target '$target' (verifier, reply, readers, http)" >&2; exit 2 ;;
esac
flags=(--scratch-path "${IAPCHECK_FUZZ_SCRATCH:-.build-fuzz}" --product iapcheck-fuzz
    -Xswiftc "-sanitize=fuzzer,address" -Xswiftc -DIAPCHECK_FUZZ -Xswiftc -use-ld=lld)
swift build "${flags[@]}" >&2
[ "$target" != build ] || exit 0
bin="$(swift build "${flags[@]}" --show-bin-path)/iapcheck-fuzz"
found=$(mktemp -d)
mkdir -p "Fuzz/crashes/$target"
echo "fuzzing $target for $seconds s; new inputs in $found" >&2
ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}" IAPCHECK_FUZZ_TARGET="$target" "$bin" "$found" "Fuzz/corpus/$target" \
    -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 -detect_leaks=0 \
    -artifact_prefix="Fuzz/crashes/$target/" -print_final_stats=1
