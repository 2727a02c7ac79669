#!/usr/bin/env bash
# Builds hashicorp/helm (terraform-provider-helm) 3.1.2 from its released source, for the tests' provider mirror
# (src/tf/mirror.rs serves it; tests/provision_with_terraform.rs installs Liqo with its `helm_release`, as Liqo's
# tutorial does). `acceptance-tests/test` runs this script. Cached outside the repository, keyed by version; nothing
# is rebuilt, and the source is not needed, once the binary exists.
#
# Usage: build-helm-provider.sh [--check]   prints the binary's path on the last line; --check only says whether
#                                           it is built or can be (exit 0), or which file is missing (exit 1)
# Env:   LIQO_HELM_PROVIDER_SOURCE           the source archive (default: $LIQO_TEST_CACHE/vendor/$ARCHIVE)
#        LIQO_TEST_CACHE                     cache root (default $HOME/.cache/terraform-provider-liqo)
#
# Why from an archive: the Go module proxy serves github.com/hashicorp/terraform-provider-helm at no 2.x or 3.x
# version (its release tags are not Go module versions: its go.mod has no /v3 suffix), nor its commits. The
# archive is the v3.1.2 tag as GitHub holds it, made with
#   git archive --format=tar --prefix=terraform-provider-helm-3.1.2/ v3.1.2 | gzip -n -9
# in a clone of github.com/hashicorp/terraform-provider-helm (commit ecffae07748ea9e2e99660e5ad3f852a12fbc5fc).
# Its tar stream is checked, not its compression: SHA-256 of the uncompressed tar below. Every module its go.mod
# requires is served by the module proxy; go.sum pins them.
set -euo pipefail

HELM_PROVIDER_VERSION=3.1.2
ARCHIVE=terraform-provider-helm-$HELM_PROVIDER_VERSION.tar.gz
TAR_SHA256=83b72e7859b50b1fb67e36099a93f71d1f55ba31a00301b870e255e8c72fdc5a

check_only=0
[ "${1:-}" = --check ] && check_only=1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"  # the cache's bin directory and the Go build settings
out="$bin/terraform-provider-helm-$HELM_PROVIDER_VERSION"
source=${LIQO_HELM_PROVIDER_SOURCE:-$cache/vendor/$ARCHIVE}

missing() {
  cat >&2 <<EOF
[build-helm-provider] hashicorp/helm $HELM_PROVIDER_VERSION is not built and its source is not at
  $source
The tests build it from the source archive of its v$HELM_PROVIDER_VERSION tag ($ARCHIVE; the Go module proxy does not
serve it). Make the archive in a clone of github.com/hashicorp/terraform-provider-helm:
  git archive --format=tar --prefix=terraform-provider-helm-$HELM_PROVIDER_VERSION/ v$HELM_PROVIDER_VERSION | gzip -n -9 >$ARCHIVE
then put it at the path above, or point LIQO_HELM_PROVIDER_SOURCE at your copy.
EOF
  exit 1
}

if [ -x "$out" ]; then
  [ "$check_only" = 1 ] || echo "$out"
  exit 0
fi
[ -f "$source" ] || missing
[ "$check_only" = 1 ] && exit 0

build_helm_provider() {
  local out=$1 work=$2 sum
  sum=$(gzip -dc "$source" | sha256sum | cut -d ' ' -f 1)
  if [ "$sum" != "$TAR_SHA256" ]; then
    echo "$source: its tar stream has SHA-256 $sum, not $TAR_SHA256 (the v$HELM_PROVIDER_VERSION tag); refusing to build it" >&2
    return 1
  fi
  tar -xzf "$source" -C "$work"
  # The version the release build stamps (goreleaser's -X main.Version), so the provider reports 3.1.2.
  (cd "$work/terraform-provider-helm-$HELM_PROVIDER_VERSION" \
    && go build -trimpath -ldflags="-s -w -X main.Version=$HELM_PROVIDER_VERSION" -o "$out" .)
}

cached_build "hashicorp/helm $HELM_PROVIDER_VERSION" "$out" build_helm_provider
echo "$out"
