#!/usr/bin/env bash
# Packs a self-contained iapcheck for Linux: the release binary with the Swift runtime linked statically and stripped,
# with the wire-protocol kits (Python, Node.js), the example target files and load profiles, and a SHA-256 file.
#
#   scripts/release.sh [--output DIR]       # default DIR: Release/
#
# Writes DIR/iapcheck-VERSION-linux-ARCH.tar.gz and DIR/iapcheck-VERSION-linux-ARCH.tar.gz.sha256; the tarball holds
# one folder of that name with `iapcheck` at its top. `iapcheck --version` names the commit it was built from.
set -euo pipefail
cd "$(dirname "$0")/.."

out=Release
while [ $# -gt 0 ]; do
  case "$1" in
    --output) [ $# -ge 2 ] || { echo "release.sh: --output needs a directory" >&2; exit 2; }; out=$2; shift 2 ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/IAPModel/IAPCheckVersion.swift)
[ -n "$version" ] || { echo "release.sh: no version in Sources/IAPModel/IAPCheckVersion.swift" >&2; exit 1; }
commit=$(git rev-parse --short=12 HEAD 2> /dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2> /dev/null)" ]; then commit="$commit+changes"; fi
arch=$(uname -m)
name="iapcheck-$version-linux-$arch"

# The commit goes into this build only: the file is put back however the build ends.
stamp=Sources/iapcheck/BuildCommit.swift
keep=$(mktemp)
cp "$stamp" "$keep"
trap 'cp "$keep" "$stamp" && rm -f "$keep"' EXIT
sed -i "s/^let buildCommit: String? = nil$/let buildCommit: String? = \"$commit\"/" "$stamp"
grep -q "\"$commit\"" "$stamp" || { echo "release.sh: could not stamp the commit into $stamp" >&2; exit 1; }

swift build -c release --product iapcheck --static-swift-stdlib
bin="$(swift build -c release --show-bin-path)/iapcheck"

stage=$(mktemp -d)
dir="$stage/$name"
mkdir -p "$dir/kits/python" "$dir/kits/node" "$dir/examples" "$dir/profiles"
cp "$bin" "$dir/iapcheck"
strip "$dir/iapcheck"
cp LICENSE "$dir/"  # Apache License 2.0: the pack is a distribution and carries it
cp Examples/python/iapcheck_wire.py Examples/python/apple_validator.py "$dir/kits/python/"
cp Examples/node/iapcheck_validator.mjs "$dir/kits/node/"
cp -r Examples/http "$dir/examples/http"
cp Examples/entitlements.json Examples/Products.storekit Examples/Products.entitlements.json "$dir/examples/"
cp Profiles/*.json Profiles/*.yaml "$dir/profiles/"
cat > "$dir/README.txt" << TXT
iapcheck $version (commit $commit), Linux $arch: a single binary; the Swift runtime is linked in.

  ./iapcheck --help
  ./iapcheck check                      # the built-in reference validator, 1000 signed cases
  ./iapcheck doctor --validator http:TARGET.json --catalog Products.storekit --bundle-id com.your.app

kits/       the wire protocol in Python and Node.js (for --validator exec:'...')
examples/   target files, catalogs and entitlements from iapcheck's repository (paths inside them are relative to
            that repository: copy and adapt them)
profiles/   load profiles (iapcheck load profiles/smoke.json)

Dynamic libraries it still needs: the C library and its companions (ldd iapcheck).
TXT
mkdir -p "$out"
tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
rm -rf "$stage"
echo "$out/$name.tar.gz"
ls -l "$out/$name.tar.gz" | awk '{print "size: " $5 " bytes"}'
