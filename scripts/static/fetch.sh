#!/usr/bin/env bash
# Fetches the pinned sources of scripts/static/sources.lock into
# ${WHEELMERGE_CACHE:-~/.cache/wheelmerge}/static/src and checks each sha256. apt runs with a
# source list, package lists and cache of its own (the system's apt settings are not touched):
# apt checks the archive's signed Release file and the Sources index, this script the pin.
# Prints the directory. Does nothing for a tarball already there with the pinned hash.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${WHEELMERGE_CACHE:-$HOME/.cache/wheelmerge}/static
src=$cache/src
mkdir -p "$src"
missing=()
while read -r name package file sha256; do
  [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
  if [ -f "$src/$file" ] && echo "$sha256  $src/$file" | sha256sum -c --quiet - >/dev/null 2>&1; then continue; fi
  missing+=("$package")
done < "$here/sources.lock"
if [ ${#missing[@]} -gt 0 ]; then
  apt=$cache/apt
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
  printf '%s\n' "deb-src http://deb.debian.org/debian bookworm main" \
                "deb-src http://deb.debian.org/debian-security bookworm-security main" > "$apt/sources.list"
  opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
  apt-get "${opts[@]}" -qq update >&2
  (cd "$src" && apt-get "${opts[@]}" -qq source --download-only "${missing[@]}" >&2)
  rm -f "$src"/*.dsc "$src"/*.debian.tar.* "$src"/*.asc
fi
while read -r name package file sha256; do
  [ -z "$name" ] || [ "${name:0:1}" = "#" ] && continue
  echo "$sha256  $src/$file" | sha256sum -c --quiet - ||
    { echo "fetch.sh: $src/$file ($package): not the pinned sha256 $sha256" >&2; exit 1; }
done < "$here/sources.lock"
echo "$src"
