#!/usr/bin/env bash
# Packages terraform-provider-liqo the way a Terraform/OpenTofu registry serves it (the same files a
# filesystem mirror holds; the acceptance tests install the provider from such a mirror).
#
# Usage:
#   ./release.sh [--out DIR]
#       cargo build --release, then package the binary for linux_amd64 into DIR (default: dist/)
#   ./release.sh package --binary PATH [--out DIR] [--os OS] [--arch ARCH]
#       package an already built binary (the tests package target/debug/terraform-provider-liqo this way)
#
# Output in DIR, VERSION being [workspace.package] version in Cargo.toml:
#   terraform-provider-liqo_VERSION_OS_ARCH.zip     holding the single file terraform-provider-liqo_vVERSION
#   terraform-provider-liqo_VERSION_manifest.json   {"version":1,"metadata":{"protocol_versions":["6.0"]}}
#   terraform-provider-liqo_VERSION_SHA256SUMS      SHA-256 of every zip of VERSION in DIR and of the manifest
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=terraform-provider-liqo

log() { printf '[release] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

workspace_version() {
  awk '
    /^\[/ { in_section = ($0 == "[workspace.package]") }
    in_section && $1 == "version" { gsub(/"/, "", $3); print $3; exit }
  ' "$repo/Cargo.toml"
}

# package BINARY OUT OS ARCH
package() {
  local binary=$1 out=$2 os=$3 arch=$4 version stage zip
  version=$(workspace_version)
  [ -n "$version" ] || die "no version under [workspace.package] in $repo/Cargo.toml"
  [ -x "$binary" ] || die "provider binary $binary is missing or not executable; build it first (cargo build -p $name)"
  command -v zip >/dev/null || die "the zip command is required (apt-get install zip)"
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  stage=$(mktemp -d)
  cp "$binary" "$stage/${name}_v${version}"
  chmod 0755 "$stage/${name}_v${version}"
  # A fixed timestamp and no extra attributes keep the archive (and so its checksum) reproducible.
  touch -d '2000-01-01 00:00:00 UTC' "$stage/${name}_v${version}"
  zip="$out/${name}_${version}_${os}_${arch}.zip"
  rm -f "$zip"
  (cd "$stage" && zip -q -X "$zip" "${name}_v${version}")
  rm -rf "$stage"
  printf '{"version":1,"metadata":{"protocol_versions":["6.0"]}}\n' >"$out/${name}_${version}_manifest.json"
  (cd "$out" && sha256sum "${name}_${version}"_*.zip "${name}_${version}_manifest.json" >"${name}_${version}_SHA256SUMS")
  log "packaged $zip"
  echo "$zip"
}

out="$repo/dist"
if [ "${1:-}" = package ]; then
  shift
  binary="" os=linux arch=amd64
  while [ $# -gt 0 ]; do
    case $1 in
      --binary) binary=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --os) os=$2; shift 2 ;;
      --arch) arch=$2; shift 2 ;;
      *) die "unknown argument $1 (see the usage at the top of $0)" ;;
    esac
  done
  [ -n "$binary" ] || die "package needs --binary PATH"
  package "$binary" "$out" "$os" "$arch"
  exit 0
fi

while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    *) die "unknown argument $1 (see the usage at the top of $0)" ;;
  esac
done
log "building $name (release)"
cargo build --release --locked --quiet --manifest-path "$repo/Cargo.toml" -p "$name" --bin "$name"
package "${CARGO_TARGET_DIR:-$repo/target}/release/$name" "$out" linux amd64
