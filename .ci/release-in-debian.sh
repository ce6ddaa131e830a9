#!/usr/bin/env bash
# Proof that the packed release runs without a Swift toolchain: packs it (scripts/release.sh), copies the binary
# alone into a minimal Debian root file system (debootstrap --variant=minbase, cached in $IAPCHECK_ROOTFS_CACHE), and
# runs check, certify over exec:, pki export and a short load there under chroot. Needs root (chroot, mount) and
# Debian's debootstrap. With `--root-only`, only makes the cached root.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${IAPCHECK_ROOTFS_CACHE:-/var/cache/iapcheck-debootstrap}
root="$cache/bookworm"
if [ ! -x "$root/bin/sh" ] || [ ! -f "$root/.complete" ]; then
  command -v debootstrap > /dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap
  }
  rm -rf "$root"
  mkdir -p "$cache"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
  touch "$root/.complete"
fi
# `--root-only`: the cached root made (a download, mostly), nothing else; CI does it early, beside its builds.
if [ "${1:-}" = --root-only ]; then
  echo "release-in-debian: the minimal root is ready in $root"
  exit 0
fi
if [ -e "$root/usr/bin/swift" ] || ls "$root"/usr/lib/swift* > /dev/null 2>&1; then
  echo "the minimal root has Swift in it: not a proof" >&2
  exit 1
fi

out=$(mktemp -d)
scripts/release.sh --output "$out"
tarball=$(ls "$out"/iapcheck-*-linux-*.tar.gz)
(cd "$out" && sha256sum -c "$(basename "$tarball").sha256")
tar -C "$out" -xzf "$tarball"
pack=$(ls -d "$out"/iapcheck-*-linux-*/)
cmp LICENSE "$pack/LICENSE" || { echo "the packed release does not carry the LICENSE" >&2; exit 1; }
echo "ldd of the packed binary (only the C library and its companions may remain):"
ldd "$pack/iapcheck" | tee "$out/ldd.txt"
if grep -qi swift "$out/ldd.txt"; then
  echo "the packed binary still needs a Swift library" >&2
  exit 1
fi

# The binary alone, plus one load profile file; a fresh working directory without the repository.
rm -rf "$root/opt/iapcheck" "$root/job"
mkdir -p "$root/opt/iapcheck" "$root/job"
cp "$pack/iapcheck" "$root/opt/iapcheck/iapcheck"
cp "$pack/profiles/smoke.json" "$root/job/smoke.json"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2> /dev/null || true' EXIT
run() { chroot "$root" /bin/sh -c "cd /job && $*"; }
run /opt/iapcheck/iapcheck --version
run /opt/iapcheck/iapcheck check --cases 200 --quiet
run "/opt/iapcheck/iapcheck certify --validator exec:'/opt/iapcheck/iapcheck serve' --scale 0.05"
run /opt/iapcheck/iapcheck pki export /job/pki
run ls /job/pki
run /opt/iapcheck/iapcheck load /job/smoke.json --quiet
echo "release-in-debian: the packed binary ran check, certify, pki export and load in a Debian root without Swift"

# The container recipe: built from the same minimal root (a registry may be out of reach) with podman. The image is
# assembled by copying only, so it builds even where containers cannot run; it is run where they can, and otherwise
# its file system is exported and the binary run from it under chroot.
command -v podman > /dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman; }
umount "$root/proc" 2> /dev/null || true
tar -C "$root" --exclude=./proc -c . | podman import - localhost/iapcheck-ci-base:bookworm > /dev/null
# The build context is the repository: the pack goes into its Release/ folder (ignored by git).
rel=Release/ci-pack
rm -rf "$rel"
mkdir -p Release
cp -r "$pack" "$rel"
podman build -q -f Containerfile --build-arg BASE=localhost/iapcheck-ci-base:bookworm --build-arg PACK="$rel" \
    -t localhost/iapcheck:ci . > /dev/null
if podman run --rm localhost/iapcheck:ci --version > "$out/podman-run.txt" 2>&1; then
  echo "container: podman run printed $(cat "$out/podman-run.txt")"
else
  echo "container: built; podman cannot run containers here ($(tail -1 "$out/podman-run.txt"))," \
    "so the image's file system is run under chroot"
  img="$out/image-root"
  mkdir -p "$img"
  c=$(podman create localhost/iapcheck:ci)
  podman export "$c" | tar -C "$img" -x
  podman rm "$c" > /dev/null
  mkdir -p "$img/proc" "$img/job"
  mount -t proc proc "$img/proc"
  chroot "$img" /bin/sh -c \
    "cd /job && /usr/local/bin/iapcheck --version && /usr/local/bin/iapcheck check --cases 100 --quiet"
  umount "$img/proc"
fi
