#!/usr/bin/env bash
# Packages terraform-provider-liqo the way a Terraform/OpenTofu registry serves it (the same files a
# filesystem mirror holds; the acceptance tests install the provider from such a mirror).
#
# Usage:
#   ./release.sh [--out DIR] [--platforms "linux_amd64 linux_arm64"]
#       build static (musl) release binaries for each platform, cross-linked with zig through cargo-zigbuild,
#       then package them into DIR (default: dist/). The cross toolchain is installed on first use into
#       ${LIQO_TEST_CACHE:-~/.cache/terraform-provider-liqo} (outside the repository, keyed by version): the Rust
#       std of each target (rustup), zig from PyPI's `ziglang` wheel, cargo-zigbuild from crates.io.
#       darwin and windows binaries need their vendors' SDKs; the release workflow builds those on their runners.
#   ./release.sh package --binary PATH [--out DIR] [--os OS] [--arch ARCH]
#       package an already built binary (the tests package target/debug/terraform-provider-liqo this way);
#       OS and ARCH are Go's names (linux, darwin, windows; amd64, arm64), default linux amd64
#
# Output in DIR, VERSION being [workspace.package] version in Cargo.toml:
#   terraform-provider-liqo_VERSION_OS_ARCH.zip     holding the single file terraform-provider-liqo_vVERSION
#                                                   (terraform-provider-liqo_vVERSION.exe for windows)
#   terraform-provider-liqo_VERSION_manifest.json   {"version":1,"metadata":{"protocol_versions":["6.0"]}}
#   terraform-provider-liqo_VERSION_SHA256SUMS      SHA-256 of every zip of VERSION in DIR and of the manifest
#   terraform-provider-liqo_VERSION_SHA256SUMS.sig  binary detached GPG signature of SHA256SUMS, only when a
#                                                   signing key is configured (below)
#
# Signing (as goreleaser-based HashiCorp provider releases do it):
#   GPG_FINGERPRINT   fingerprint (or GPG_KEY_ID: any key ID gpg accepts for --local-user) of the secret key;
#                     the registries accept RSA or DSA keys only, not ECC
#   GNUPGHOME         the keyring holding it (gpg's own variable; default ~/.gnupg)
#   GPG_PASSPHRASE    the key's passphrase, when no gpg-agent has it cached (passed on a file descriptor)
# Each package call rewrites SHA256SUMS, so it signs again; without a key it removes any older signature,
# which would no longer match.
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

# The file name a registry expects inside the zip (Windows runs only .exe files).
member_name() {
  local os=$1 version=$2
  if [ "$os" = windows ]; then echo "${name}_v${version}.exe"; else echo "${name}_v${version}"; fi
}

# package BINARY OUT OS ARCH
package() {
  local binary=$1 out=$2 os=$3 arch=$4 version stage zip member
  version=$(workspace_version)
  [ -n "$version" ] || die "no version under [workspace.package] in $repo/Cargo.toml"
  # A Windows binary built elsewhere arrives without the executable bit; it only has to be there.
  if [ "$os" = windows ]; then
    [ -f "$binary" ] || die "provider binary $binary is missing; build it first (cargo build -p $name --target ...)"
  else
    [ -x "$binary" ] || die "provider binary $binary is missing or not executable; build it first (cargo build -p $name)"
  fi
  command -v zip >/dev/null || die "the zip command is required (apt-get install zip)"
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  member=$(member_name "$os" "$version")
  stage=$(mktemp -d)
  cp "$binary" "$stage/$member"
  chmod 0755 "$stage/$member"
  # A fixed timestamp and no extra attributes keep the archive (and so its checksum) reproducible.
  touch -d '2000-01-01 00:00:00 UTC' "$stage/$member"
  zip="$out/${name}_${version}_${os}_${arch}.zip"
  rm -f "$zip"
  (cd "$stage" && zip -q -X "$zip" "$member")
  rm -rf "$stage"
  printf '{"version":1,"metadata":{"protocol_versions":["6.0"]}}\n' >"$out/${name}_${version}_manifest.json"
  (cd "$out" && sha256sum "${name}_${version}"_*.zip "${name}_${version}_manifest.json" >"${name}_${version}_SHA256SUMS")
  sign "$out/${name}_${version}_SHA256SUMS"
  log "packaged $zip"
  echo "$zip"
}

# sign SUMS: writes SUMS.sig with the configured key, or removes a stale one when no key is configured.
sign() {
  local sums=$1 key=${GPG_FINGERPRINT:-${GPG_KEY_ID:-}}
  local sig="$sums.sig"
  if [ -z "$key" ]; then
    rm -f "$sig"
    log "not signing $(basename "$sums"): no key configured (set GPG_FINGERPRINT or GPG_KEY_ID); registries need $(basename "$sig")"
    return 0
  fi
  command -v gpg >/dev/null || die "GPG_FINGERPRINT/GPG_KEY_ID is set but gpg is not installed (apt-get install gnupg)"
  local args=(--batch --yes --local-user "$key" --output "$sig" --detach-sign)
  rm -f "$sig"
  if [ -n "${GPG_PASSPHRASE:-}" ]; then
    gpg "${args[@]}" --pinentry-mode loopback --passphrase-fd 3 "$sums" 3<<<"$GPG_PASSPHRASE" >&2 \
      || die "gpg could not sign $sums with key $key (GNUPGHOME=${GNUPGHOME:-~/.gnupg}); check the key and GPG_PASSPHRASE"
  else
    gpg "${args[@]}" "$sums" >&2 \
      || die "gpg could not sign $sums with key $key (GNUPGHOME=${GNUPGHOME:-~/.gnupg}); is the secret key imported and its passphrase cached or in GPG_PASSPHRASE?"
  fi
  # A signature the registries cannot check is worse than none: verify it against the same keyring now.
  gpg --batch --verify "$sig" "$sums" 2>/dev/null || die "gpg made $sig but it does not verify against $sums"
  log "signed $(basename "$sums") with key $key"
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

ZIGLANG_VERSION=0.13.0.post1
CARGO_ZIGBUILD_VERSION=0.24.1

# Rust target triple of a registry platform this script can build here.
rust_target() {
  case $1 in
    linux_amd64) echo x86_64-unknown-linux-musl ;;
    linux_arm64) echo aarch64-unknown-linux-musl ;;
    *) die "platform $1 cannot be cross-built here (darwin and windows need their SDKs): build it on its own OS and run ./release.sh package" ;;
  esac
}

# Installs what is missing of the cross toolchain into the cache and puts zig and cargo-zigbuild on PATH.
cross_toolchain() {
  local cache=${LIQO_TEST_CACHE:-$HOME/.cache/terraform-provider-liqo}
  local zig_dir="$cache/ziglang-$ZIGLANG_VERSION" zigbuild_root="$cache/cargo-zigbuild-$CARGO_ZIGBUILD_VERSION"
  if [ ! -x "$zig_dir/ziglang/zig" ]; then
    log "installing zig (PyPI ziglang==$ZIGLANG_VERSION) into $zig_dir (once)"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$zig_dir" "ziglang==$ZIGLANG_VERSION" \
      || die "could not install ziglang==$ZIGLANG_VERSION from PyPI (needs python3 with pip)"
  fi
  if [ ! -x "$zigbuild_root/bin/cargo-zigbuild" ]; then
    log "building cargo-zigbuild $CARGO_ZIGBUILD_VERSION into $zigbuild_root (once)"
    CARGO_TARGET_DIR="$zigbuild_root/build" cargo install --locked --quiet --version "=$CARGO_ZIGBUILD_VERSION" \
      --root "$zigbuild_root" cargo-zigbuild || die "cargo install cargo-zigbuild failed (see above)"
    rm -rf "$zigbuild_root/build"
  fi
  export PATH="$zig_dir/ziglang:$zigbuild_root/bin:$PATH"
}

platforms="linux_amd64 linux_arm64"
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --platforms) platforms=$2; shift 2 ;;
    *) die "unknown argument $1 (see the usage at the top of $0)" ;;
  esac
done
cross_toolchain
for platform in $platforms; do
  target=$(rust_target "$platform")
  rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2 \
    || die "rustup target add $target failed"
  log "building $name for $platform ($target, static, release)"
  cargo zigbuild --release --locked --quiet --manifest-path "$repo/Cargo.toml" -p "$name" --bin "$name" --target "$target" \
    || die "cargo zigbuild for $target failed (see above)"
  package "${CARGO_TARGET_DIR:-$repo/target}/$target/release/$name" "$out" "${platform%_*}" "${platform#*_}"
done
