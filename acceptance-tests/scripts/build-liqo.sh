#!/usr/bin/env bash
# Builds real Liqo for the test ground from its Go module (github.com/liqotech/liqo, default v1.2.0; v1.0.3, v1.1.2
# and v1.2.0 are the versions the proxy serves), plus the two tools that install and host it without a container
# runtime: Helm (renders Liqo's own chart, as `helm install` would) and kwok (fake nodes; marks pods Running).
# Everything lands in a cache outside the repository keyed by version; a binary already there is reused.
#
# Layout of $bin/liqo-<VERSION>/: liqo-controller-manager, webhook, ipam, crd-replicator, virtual-kubelet, gateway,
# wireguard, geneve, fabric, uninstaller (the chart's pre-delete hook), liqoctl, chart/ (a copy of that version's
# deployments/liqo, CRD subchart included) and wireguard-image/usr/bin/wireguard-go (what Liqo's wireguard image
# adds; see build_wireguard_go).
# $bin/helm and $bin/kwok point at the pinned builds.
#
# Usage: build-liqo.sh [--no-liqoctl] [VERSION]
#                                     prints $bin/liqo-<VERSION> on the last line; --no-liqoctl skips liqoctl (the
#                                     ground runs without it; only the adoption tests and `ground` users run it)
# Env:   LIQO_TEST_CACHE              cache root (default $HOME/.cache/terraform-provider-liqo)
set -euo pipefail

with_liqoctl=1
if [ "${1:-}" = --no-liqoctl ]; then
  with_liqoctl=0
  shift
fi
LIQO_VERSION=${1:-v1.2.0}
HELM_VERSION=v3.19.0
KWOK_VERSION=v0.7.0

case $LIQO_VERSION in
  v*) ;;
  *) echo "build-liqo.sh: a Liqo version looks like v1.2.0, not \"$LIQO_VERSION\"" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

liqo="$bin/liqo-$LIQO_VERSION"
# The binaries a cluster with Liqo runs (the chart's Deployments, the per-VirtualNode virtual-kubelet, the
# gateway pods' containers and the uninstaller of the chart's pre-delete hook Job, which `helm uninstall` runs).
# Built in one `go build` so the packages they share compile once.
COMPONENTS=(liqo-controller-manager webhook ipam crd-replicator virtual-kubelet gateway gateway/wireguard
  gateway/geneve fabric uninstaller)

# OUT is the controller-manager; the other components land beside it first, so a cached controller-manager means
# all of them are there (but the uninstaller in a cache built before it was a component: build_uninstaller). The
# chart is copied (writable) from the same module directory as the binaries.
build_liqo_components() {
  local out=$1 work=$2 packages=() name
  for name in "${COMPONENTS[@]}"; do packages+=("./cmd/$name"); done
  # build_in_module_copy takes one package; this is the same copy, built with several.
  copy_module "github.com/liqotech/liqo@$LIQO_VERSION" "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags="-s -w" -o "$work/out/" "${packages[@]}")
  rm -rf "$liqo/chart"
  cp -r "$work/src/deployments/liqo" "$liqo/chart"
  for name in "${COMPONENTS[@]}"; do
    name=$(basename "$name")
    [ "$name" = liqo-controller-manager ] || mv "$work/out/$name" "$liqo/$name"
  done
  mv "$work/out/liqo-controller-manager" "$out"
}

# The uninstaller on its own, for caches whose components were built before it joined COMPONENTS: their cached
# controller-manager skips the components' build. Where the components were just built, it is there already.
build_uninstaller() {
  build_in_module_copy "github.com/liqotech/liqo@$LIQO_VERSION" ./cmd/uninstaller "-s -w" "$1" "$2"
}

# liqoctl on its own: it takes as long as all the components together and the ground does not need it to start.
build_liqoctl() {
  build_in_module_copy "github.com/liqotech/liqo@$LIQO_VERSION" ./cmd/liqoctl \
    "-s -w -X github.com/liqotech/liqo/pkg/liqoctl/version.LiqoctlVersion=$LIQO_VERSION" "$1" "$2"
}

# Liqo's wireguard image also holds wireguard-go, which Liqo before 1.2 runs as /usr/bin/wireguard-go for the
# userspace implementation (1.2 links it in). The image builds it from a git commit the module proxy does not
# serve by hash; this is the wireguard-go module version that Liqo's own go.mod requires. Its old golang.org/x/net
# reaches into the runtime by linkname, which current Go refuses unless told (-checklinkname=0).
build_wireguard_go() {
  local out=$1 work=$2 module version
  module=$(module_dir "github.com/liqotech/liqo@$LIQO_VERSION")
  version=$(awk '$1 == "golang.zx2c4.com/wireguard" { print $2 }' "$module/go.mod")
  [ -n "$version" ] || { echo "build-liqo.sh: Liqo $LIQO_VERSION's go.mod requires no golang.zx2c4.com/wireguard" >&2; return 1; }
  GOBIN="$work" go install -trimpath -ldflags="-s -w -checklinkname=0" "golang.zx2c4.com/wireguard@$version"
  mkdir -p "$(dirname "$out")"
  mv "$work/wireguard" "$out"
}

# Helm and kwok have no replace directives: `go install` of the pinned version, into the work directory.
build_helm() {
  local out=$1 work=$2
  GOBIN="$work" go install -trimpath \
    -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
  mv "$work/helm" "$out"
}

build_kwok() {
  local out=$1 work=$2
  GOBIN="$work" go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$work/kwok" "$out"
}

mkdir -p "$liqo"
cached_build "Liqo $LIQO_VERSION components" "$liqo/liqo-controller-manager" build_liqo_components
cached_build "Liqo $LIQO_VERSION uninstaller" "$liqo/uninstaller" build_uninstaller
cached_build "wireguard-go for Liqo $LIQO_VERSION" "$liqo/wireguard-image/usr/bin/wireguard-go" build_wireguard_go
[ "$with_liqoctl" = 0 ] || cached_build "liqoctl $LIQO_VERSION" "$liqo/liqoctl" build_liqoctl
cached_build "Helm $HELM_VERSION" "$bin/helm-$HELM_VERSION" build_helm
cached_build "kwok $KWOK_VERSION" "$bin/kwok-$KWOK_VERSION" build_kwok
ln -sfn "helm-$HELM_VERSION" "$bin/helm"
ln -sfn "kwok-$KWOK_VERSION" "$bin/kwok"
echo "$liqo"
