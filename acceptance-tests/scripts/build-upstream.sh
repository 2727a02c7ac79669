#!/usr/bin/env bash
# Builds the upstream binaries the test ground runs — etcd, kube-apiserver, kube-controller-manager and
# OpenTofu — from their Go modules, pinned below, into a cache outside the repository keyed by version, and
# Terraform 1.0.11, the oldest client line the provider supports (see build_terraform_1_0).
# A binary already in the cache is reused; nothing is rebuilt unless it is missing.
#
# Usage: build-upstream.sh            builds what is missing, prints the bin directory on the last line
# Env:   LIQO_TEST_CACHE              cache root (default $HOME/.cache/terraform-provider-liqo)
set -euo pipefail

KUBERNETES_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
OPENTOFU_VERSION=v1.10.10
TERRAFORM_1_0_VERSION=1.0.11

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

# build_in_module_copy NAME MODULE@VERSION PACKAGE LDFLAGS OUT: builds PACKAGE of a module whose go.mod has replace
# directives (so `go install` refuses it) in a writable copy of its downloaded module directory, into OUT.
build_in_module_copy() {
  local name=$1 module=$2 package=$3 ldflags=$4 out=$5 dir work
  log "building $name (first run only)"
  work=$(mktemp -d)
  dir=$(go mod download -json "$module" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$dir" "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags="$ldflags" -o "$out.tmp" "$package") \
    || { log "$name build failed in $work"; return 1; }
  rm -rf "$work"
}

build_opentofu() {
  local out="$bin/tofu-$OPENTOFU_VERSION"
  [ -x "$out" ] && return 0
  build_in_module_copy "OpenTofu $OPENTOFU_VERSION" "github.com/opentofu/opentofu@$OPENTOFU_VERSION" ./cmd/tofu \
    "-s -w -X github.com/opentofu/opentofu/version.dev=no" "$out" || return 1
  mv "$out.tmp" "$out"
}

# Terraform 1.0.x, the oldest line with plugin protocol 6, built like OpenTofu (its go.mod has replace directives
# too). 1.0.11 is the last 1.0 release; earlier 1.0 releases crash planning nested attributes (fixed in 1.0.5),
# so they prove nothing a user of 1.0 should rely on.
build_terraform_1_0() {
  local out="$bin/terraform-$TERRAFORM_1_0_VERSION" said
  [ -x "$out" ] && return 0
  build_in_module_copy "Terraform $TERRAFORM_1_0_VERSION" "github.com/hashicorp/terraform@v$TERRAFORM_1_0_VERSION" . \
    "-s -w" "$out" || return 1
  said=$(CHECKPOINT_DISABLE=1 "$out.tmp" version 2>&1 | head -n 1 || true)
  if [ "$said" != "Terraform v$TERRAFORM_1_0_VERSION" ]; then
    log "the Terraform built from its module says \"$said\", not Terraform v$TERRAFORM_1_0_VERSION"
    rm -f "$out.tmp"
    return 1
  fi
  mv "$out.tmp" "$out"
}

build_etcd
build_kubernetes
build_opentofu
build_terraform_1_0
ln -sf "etcd-$ETCD_VERSION" "$bin/etcd"
ln -sf "kube-apiserver-$KUBERNETES_VERSION" "$bin/kube-apiserver"
ln -sf "kube-controller-manager-$KUBERNETES_VERSION" "$bin/kube-controller-manager"
ln -sf "tofu-$OPENTOFU_VERSION" "$bin/tofu"
ln -sf "terraform-$TERRAFORM_1_0_VERSION" "$bin/terraform-1.0"
echo "$bin"
