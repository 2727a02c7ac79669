# Shared by the build scripts (sourced, not run): the version-keyed cache, Go module downloads, building inside a
# writable copy of a module, and one progress line per build step with the full log kept in a file.
#
# After sourcing: $cache (LIQO_TEST_CACHE, default ~/.cache/terraform-provider-liqo), $bin (binaries, by version),
# $logs (one log per build). Progress goes to stderr; stdout stays free for the scripts' own result line.

cache=${LIQO_TEST_CACHE:-$HOME/.cache/terraform-provider-liqo}
bin="$cache/bin"
logs="$cache/logs"
mkdir -p "$bin" "$logs"
# Static binaries that do not depend on the machine's libc; no VCS stamping (module copies have no .git). No DWARF
# from the compiler: every build links with -s -w, which drops it anyway, and making it cost 7.5% of a build's CPU
# (etcd from an empty build cache: 86 CPU-seconds with it, 80 without).
export GOFLAGS='-buildvcs=false -gcflags=all=-dwarf=false' CGO_ENABLED=0

# Module versions the Go checksum database does not list (the proxy serves them, sum.golang.org answers 404), with
# the h1: hash of the module as first downloaded and checked by hand. Go then skips the database for that module
# path only, and module_dir compares the download against this hash instead, so the pin is as strict as the
# database would be.
declare -A PINNED_SUMS=(
  ["github.com/opentofu/opentofu@v1.11.7"]="h1:Gk/g9KLcmWJmyfGsXMiThmNnM/5o62mFUx0aUv9THoI="
)

progress() { printf '[build] %s\n' "$*" >&2; }

# module_dir MODULE@VERSION: downloads the module (once; Go's module cache keeps it) and prints its directory.
module_dir() {
  local spec=$1 pinned=${PINNED_SUMS[$1]:-} json
  if [ -n "$pinned" ]; then
    json=$(GONOSUMDB="${spec%@*}" go mod download -json "$spec") || { echo "$json"; return 1; }
  else
    json=$(go mod download -json "$spec") || { echo "$json"; return 1; }
  fi
  python3 - "$spec" "$pinned" "$json" <<'PY'
import json, sys
spec, pinned, raw = sys.argv[1], sys.argv[2], sys.argv[3]
info = json.loads(raw)
if info.get("Error"):
    sys.exit(f"go mod download {spec}: {info['Error']}")
if pinned and info.get("Sum") != pinned:
    sys.exit(f"go mod download {spec}: hash {info.get('Sum')} differs from the pinned {pinned}")
print(info["Dir"])
PY
}

# build_in_module_copy MODULE@VERSION PACKAGE LDFLAGS OUT WORK: builds PACKAGE of a module whose go.mod has replace
# directives (so `go install` refuses it) in a writable copy of its downloaded module directory, into OUT.
build_in_module_copy() {
  local spec=$1 package=$2 ldflags=$3 out=$4 work=$5
  copy_module "$spec" "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags="$ldflags" -o "$out" "$package")
}

# copy_module MODULE@VERSION DEST: a writable copy of the downloaded module directory (Go's cache is read-only).
copy_module() {
  local dir
  dir=$(module_dir "$1")
  cp -r "$dir" "$2"
  chmod -R u+w "$2"
}

# cached_build LABEL OUT FUNCTION [ARGS…]: unless OUT exists, runs `FUNCTION ARGS… OUT.tmp WORKDIR` in a subshell
# with its output in $logs/<OUT's name>.log, then moves OUT.tmp to OUT. Prints one line with the duration; on
# failure, the last lines of the log and the log's path, and returns 1.
# One build of OUT at a time (an exclusive flock on OUT.lock): the test command builds older Liqo releases while
# its tests run, and a test that needs one of them runs this same script; it waits for that build, then finds OUT.
cached_build() {
  local label=$1 out=$2 fn=$3 log work began rc lock
  shift 3
  [ -e "$out" ] && return 0
  mkdir -p "$(dirname "$out")"
  exec {lock}>"$out.lock"
  if ! flock -n "$lock"; then
    progress "$label: another process is building it; waiting for it"
    flock "$lock"
  fi
  if [ -e "$out" ]; then
    exec {lock}>&-
    return 0
  fi
  log="$logs/$(basename "$out").log"
  work=$(mktemp -d)
  began=$(date +%s)
  progress "$label: building (first run only; log: $log)"
  set +e
  # The build's processes do not inherit the lock: one left running would hold it after this function returned.
  (exec {lock}>&-; set -e; "$fn" "$@" "$out.tmp" "$work") >"$log" 2>&1
  rc=$?
  set -e
  if [ $rc -ne 0 ] || [ ! -e "$out.tmp" ]; then
    progress "$label: FAILED after $(($(date +%s) - began)) s; last lines of $log:"
    tail -n 25 "$log" | sed 's/^/    /' >&2
    progress "work directory kept for inspection: $work"
    exec {lock}>&-
    return 1
  fi
  mv "$out.tmp" "$out"
  exec {lock}>&-
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
  progress "$label: built in $(($(date +%s) - began)) s"
}
