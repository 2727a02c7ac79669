#!/usr/bin/env bash
# Builds hashicorp/kubernetes (terraform-provider-kubernetes) from its Go module, pinned below, for the
# benchmark that compares a peering written with `kubernetes_manifest` against this provider, and for the tests'
# provider mirror (src/tf/mirror.rs serves it, for the liqo_offload documentation example's kubernetes_namespace;
# `acceptance-tests/test` runs this script). Cached outside the repository, keyed by version; nothing is rebuilt
# when the binary exists.
#
# Usage: build-kubernetes-provider.sh   prints the binary's path on the last line
# Env:   LIQO_TEST_CACHE                 cache root (default $HOME/.cache/terraform-provider-liqo)
#
# The provider's v2.x/v3.x release tags are not valid Go module versions (its go.mod has no /vN suffix), so the
# Go module proxy serves it only under pseudo-versions of commits. The pin is the commit after release 3.2.1
# (CHANGELOG.md of that commit); KUBERNETES_PROVIDER_VERSION is the version Terraform sees in the mirror.
set -euo pipefail

MODULE=github.com/hashicorp/terraform-provider-kubernetes
MODULE_VERSION=v1.13.4-0.20260821094251-3a33fb6cc605
KUBERNETES_PROVIDER_VERSION=3.2.1

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"  # the cache's bin directory and the Go build settings
out="$bin/terraform-provider-kubernetes-$KUBERNETES_PROVIDER_VERSION"

if [ ! -x "$out" ]; then
  printf '[build-kubernetes-provider] building %s %s (first run only, several minutes)\n' "$MODULE" "$MODULE_VERSION" >&2
  work=$(mktemp -d)
  dir=$(go mod download -json "$MODULE@$MODULE_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  # Build in a writable copy of the downloaded module (its own go.mod/go.sum, as a release build would).
  cp -r "$dir/." "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags="-s -w" -o "$out.tmp" .) \
    || { printf '[build-kubernetes-provider] build failed in %s\n' "$work" >&2; exit 1; }
  mv "$out.tmp" "$out"
  rm -rf "$work"
fi
echo "$out"
