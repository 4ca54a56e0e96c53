#!/usr/bin/env bash
# How a release is checked (issue 11): the README's two quick-start commands
# on a freshly installed Debian 12 root with nothing but Debian's base system.
#
#   scripts/release-check.sh [--root DIR] [--keep] [--until STAGE]
#
# As root. Stages, in order (--until stops after one):
#   bootstrap  debootstrap bookworm (--variant=minbase) into DIR from the
#              Debian mirror this machine is configured with
#              (/etc/apt/sources.list.d/debian.sources; GACC_DEBIAN_MIRROR
#              overrides it), with bookworm-updates and bookworm-security,
#              where this machine's LLVM 22 packages come from;
#   clone      a clean clone of this repository's HEAD (committed files only)
#              at DIR/root/gacc;
#   deps       scripts/install-deps.sh inside the root (apt from the mirror);
#   quickstart scripts/quickstart.sh inside the root;
#   test       scripts/test.sh inside the root (the whole lit suite).
# The root has /proc, /sys and /dev bound and no CUDA (the toolkit in
# /usr/local/cuda is not a Debian package): the build must configure without
# it. The log of each stage is DIR/release-check-STAGE.log. Exits nonzero at
# the first stage that fails, naming it. DIR defaults to a new folder under
# /var/tmp and is removed at the end unless --keep (or a failure).
set -euo pipefail

ROOT=""
KEEP=0
UNTIL=test
while [ $# -gt 0 ]; do
  case "$1" in
    --root) ROOT="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --until) UNTIL="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "release-check: error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case "$UNTIL" in
  bootstrap|clone|deps|quickstart|test) ;;
  *) echo "release-check: error: --until must be one of bootstrap clone deps quickstart test, not '$UNTIL'" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  echo "release-check: error: run as root (debootstrap and chroot need it)" >&2
  exit 2
fi

SRC="$(cd "$(dirname "$0")/.." && pwd)"
MIRROR="${GACC_DEBIAN_MIRROR:-}"
if [ -z "$MIRROR" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
  MIRROR=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' \
    /etc/apt/sources.list.d/debian.sources)
fi
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SECURITY="${GACC_DEBIAN_SECURITY:-${MIRROR%/debian}/debian-security}"

if [ -z "$ROOT" ]; then
  ROOT=$(mktemp -d /var/tmp/gacc-release-check.XXXXXX)
fi
mkdir -p "$ROOT"
echo "release-check: root $ROOT, mirror $MIRROR, security $SECURITY"

mounted=()
cleanup() {
  local status=$?
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount -l "${mounted[$i]}" 2>/dev/null || true
  done
  if [ $status -eq 0 ] && [ $KEEP -eq 0 ]; then
    rm -rf --one-file-system "$ROOT"
  else
    echo "release-check: the root is kept at $ROOT"
  fi
}
trap cleanup EXIT

stage() { # NAME COMMAND...: runs a stage with its log, stops on failure
  local name=$1; shift
  local log="$ROOT/release-check-$name.log"
  echo "release-check: [$name] ... (log: $log)"
  local start=$SECONDS
  if ! "$@" >"$log" 2>&1; then
    echo "release-check: error: stage '$name' failed after $((SECONDS - start)) s; last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  echo "release-check: [$name] ok ($((SECONDS - start)) s)"
  if [ "$UNTIL" = "$name" ]; then
    echo "release-check: stopped after '$name' (--until)"
    exit 0
  fi
}

bind() {
  mkdir -p "$ROOT/$1"
  mount --bind "/$1" "$ROOT/$1"
  mounted+=("$ROOT/$1")
}

in_root() { # runs a command as root in the chroot, in /root/gacc
  chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    DEBIAN_FRONTEND=noninteractive \
    /bin/bash -c "cd /root/gacc && $*"
}

do_bootstrap() {
  if ! command -v debootstrap >/dev/null; then
    apt-get install -y -qq --no-install-recommends debootstrap
  fi
  if [ ! -x "$ROOT/bin/bash" ]; then
    debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR"
  fi
  cat >"$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $SECURITY bookworm-security main
EOF
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
  # The root must not see a CUDA toolkit.
  test ! -e "$ROOT/usr/local/cuda"
}

do_clone() {
  rm -rf "$ROOT/root/gacc"
  git clone -q --no-hardlinks "$SRC" "$ROOT/root/gacc"
  git -C "$ROOT/root/gacc" log -1 --oneline
}

stage bootstrap do_bootstrap
bind proc
bind sys
bind dev
bind dev/pts
stage clone do_clone
stage deps in_root scripts/install-deps.sh
stage quickstart in_root scripts/quickstart.sh
stage test in_root scripts/test.sh
echo "release-check: all stages passed on a fresh Debian 12 root"
