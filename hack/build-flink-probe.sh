#!/usr/bin/env bash
# Build the real-Flink test tier's probe (flink-probe/: the keyed-counter job and the `_metadata` reader) once per
# Flink version, and cache it. tests/flink_job.py runs it; docs/restore.md, "Proven by Flink", says what it proves.
#
# Usage: bash hack/build-flink-probe.sh [FLINK_VERSION...]   (default: every version of the tier, below)
# Needs Java 17 and Maven; without Maven it installs Debian's `maven` package (as root or with passwordless sudo).
# Flink's jars come from Maven Central into the local Maven repository (~/.m2) on the first build; afterwards the
# build runs offline (`mvn -o`).
# Exit status: 0 done; 4 no Java or Maven and none could be installed; anything else a failed build.
# tests/flink_job.py turns 4 into a skip (locally) or a failure (CI).
# Output: ${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/flink-probe/<key>/<version>/ with classes/ and classpath
# (the jars, one per line); the last line of stdout is .../flink-probe/<key>. The key is a hash of the module's
# sources, so an edited probe is built anew and a warm cache costs nothing.
# The whole script is one block, read before it runs.
{
set -euo pipefail

VERSIONS=("$@")
[[ ${#VERSIONS[@]} -gt 0 ]] || VERSIONS=(1.20.3 2.2.0)

log() { echo "build-flink-probe: $*" >&2; }
here="$(cd "$(dirname "$0")/.." && pwd)"
module="$here/flink-probe"
key="$(cd "$module" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)"
cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/failover-relay/flink-probe/$key"

complete() { [[ -f "$cache_root/$1/classpath" && -d "$cache_root/$1/classes/io" ]]; }
missing=()
for version in "${VERSIONS[@]}"; do complete "$version" || missing+=("$version"); done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "$cache_root"
  exit 0
fi

if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
  sudo=""
  [[ "$(id -u)" -eq 0 ]] || sudo="sudo -n"
  if command -v apt-get >/dev/null; then
    log "installing Debian's maven (and a JDK)"
    { $sudo apt-get install -y --no-install-recommends maven openjdk-17-jdk-headless >&2 \
      || { $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends maven openjdk-17-jdk-headless >&2; }; } \
      || true
  fi
  if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    log "needs java (17) and mvn; install Maven"
    exit 4
  fi
fi

mkdir -p "$cache_root"
# shellcheck source=build-lock.sh
source "$here/hack/build-lock.sh"
take_build_lock "$cache_root"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$module/pom.xml" "$module/src" "$work/"
for version in "${missing[@]}"; do
  complete "$version" && continue
  started=$SECONDS
  # The S3 file system only for 2.x: flink-s3-fs-hadoop 1.20.3 is not served (flink-probe/pom.xml); ForSt is a state
  # backend of 2.x only.
  only2=()
  [[ "$version" == 2.* ]] && only2=(-Ds3 -Dforst)
  build() { mvn -B -q -Dstyle.color=never "$@" "${only2[@]}" -Dflink.version="$version" -f "$work/pom.xml" compile \
    dependency:build-classpath -Dmdep.outputFile="$work/classpath-$version" >&2; }
  # Offline first: a warm ~/.m2 needs no network; a cold one downloads (about 250 MB per version).
  build -o 2>/dev/null || { log "Flink $version: downloading its jars"; build; }
  rm -rf "${cache_root:?}/$version" "${cache_root:?}/.$version.partial"
  mkdir -p "$cache_root/.$version.partial"
  cp -r "$work/target/flink-$version/classes" "$cache_root/.$version.partial/classes"
  tr ':' '\n' <"$work/classpath-$version" >"$cache_root/.$version.partial/classpath"
  mv "$cache_root/.$version.partial" "$cache_root/$version"
  log "Flink $version: built in $((SECONDS - started)) s"
done
echo "$cache_root"
exit
}
