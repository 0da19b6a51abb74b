#!/usr/bin/env bash
# A clean Debian root for installing wheelmerge's own wheel where none of the libraries it
# links are (tests/integration/release/test_own_wheel.py, test_static_wheels.py): debootstrap's minbase
# variant plus python3 and python3-venv, from Debian's mirror, nothing else. SUITE is bookworm
# (Debian 12, the default) or bullseye (Debian 11: glibc 2.31, Python 3.9, pip 20.3). Kept as a
# tarball in ${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/clean-root/ and made once (about a
# minute and 80 MB of packages); prints the tarball's path. Needs root (debootstrap, and the tests chroot).
#
#   scripts/clean-root.sh [SUITE]
set -euo pipefail
cache=${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/clean-root
suite=${1:-bookworm}
case $suite in bookworm|bullseye) ;; *) echo "clean-root: unknown suite $suite" >&2; exit 1 ;; esac
tarball=$cache/$suite-minbase-python3.tar
if [ -f "$tarball" ]; then echo "$tarball"; exit 0; fi
[ "$(id -u)" = 0 ] || { echo "clean-root: debootstrap needs root" >&2; exit 1; }
if ! command -v debootstrap >/dev/null; then
  apt-get install -y -q debootstrap >&2 || { apt-get update -q >&2 && apt-get install -y -q debootstrap >&2; }
fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/.root.XXXXXX")
trap 'rm -rf "$work"' EXIT
debootstrap --variant=minbase --include=python3,python3-venv "$suite" "$work/root" http://deb.debian.org/debian >&2
rm -rf "$work/root/var/cache/apt/archives"/*.deb
tar -C "$work/root" -cf "$work/root.tar" .
mv "$work/root.tar" "$tarball"
echo "$tarball"
