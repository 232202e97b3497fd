# shellcheck shell=bash
# Sourced by the hack/build-*.sh scripts that fill a cache directory: one build per cache directory at a time, so a
# second run (a parallel test session, a CI retry) waits for the first and then finds its result instead of building
# it again on the same two cores.
#
# take_build_lock DIR: holds an exclusive lock on DIR/.build.lock (file descriptor 9) for the rest of the script.
# The caller checks again afterwards whether the result is there: the build it waited for may have made it.
# Without flock (not on every machine) there is no lock, as before there was one.
take_build_lock() {
  exec 9>"$1/.build.lock"
  command -v flock >/dev/null || return 0
  if ! flock --nonblock 9; then
    log "another build holds $1/.build.lock; waiting for it"
    flock 9
  fi
}
