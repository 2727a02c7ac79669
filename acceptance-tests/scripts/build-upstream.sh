#!/usr/bin/env bash
# Builds the upstream binaries the tests run, from their Go modules, pinned below, into a cache outside the
# repository keyed by version: etcd, kube-apiserver, kube-controller-manager and kube-scheduler (the ground), kubectl
# (what the provider's warnings tell a user to run, which the tests run as printed), and
# the three clients the acceptance suite proves the provider with — Terraform 1.16.4 and OpenTofu 1.11.7 (the
# newest releases, the whole suite) and Terraform 1.0.11 (the oldest line with plugin protocol 6, a subset; README
# "Supported versions"); and Terraform 1.16.4 again with its experiments allowed, for `-allow-deferral`.
# A binary already in the cache is reused; nothing is rebuilt unless it is missing.
#
# Output: one line per step with its duration; the full log of each build is kept in $cache/logs/ and its last
# lines are printed when it fails.
#
# Usage: build-upstream.sh            builds what is missing, prints the bin directory on the last line
# Env:   LIQO_TEST_CACHE              cache root (default $HOME/.cache/terraform-provider-liqo)
set -euo pipefail

KUBERNETES_VERSION=v1.34.4
ETCD_VERSION=v3.6.16
TERRAFORM_VERSION=1.16.4
OPENTOFU_VERSION=1.11.7
TERRAFORM_1_0_VERSION=1.0.11
TFPLUGINDOCS_VERSION=v0.25.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

build_etcd() {
  local out=$1 work=$2
  # etcd publishes its server as a library; a three-line main around etcdmain is the etcd binary.
  cat >"$work/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  cd "$work"
  go mod init ground/etcd
  go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  go mod tidy
  go build -trimpath -ldflags='-s -w' -o "$out" .
}

# kube-apiserver, kube-controller-manager, kube-scheduler (which places the pods of Liqo's Deployments on the
# ground's fake nodes) and kubectl in one build, as they share most packages. OUT is kubectl, the newest of the four
# in this script: the other three land beside it first, so a cached kubectl means all four are there, and a cache
# filled before kubectl was added gets all four anew.
build_kubernetes() {
  local out=$1 work=$2 dir staging
  # k8s.io/kubernetes cannot be `go install`ed: its go.mod points the k8s.io/* staging modules at ./staging.
  # A throwaway module requires it and replaces each staging module with its published v0.X.Y twin.
  dir=$(module_dir "k8s.io/kubernetes@$KUBERNETES_VERSION")
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
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  cd "$work"
  go mod tidy
  go build -trimpath -ldflags='-s -w' -o "$work/out/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
  mv "$work/out/kube-apiserver" "$bin/kube-apiserver-$KUBERNETES_VERSION"
  mv "$work/out/kube-controller-manager" "$bin/kube-controller-manager-$KUBERNETES_VERSION"
  mv "$work/out/kube-scheduler" "$bin/kube-scheduler-$KUBERNETES_VERSION"
  mv "$work/out/kubectl" "$out"
}

# A client built from its module (their go.mod files have replace directives, so `go install` refuses them); checks
# that the binary reports the pinned version, since a module copy could build something else and still succeed.
build_client() {
  local module=$1 package=$2 ldflags=$3 expected=$4 out=$5 work=$6 said
  copy_module "$module" "$work/src"
  drop_missing_nested_modules "$work/src"
  (cd "$work/src" && go build -trimpath -ldflags="$ldflags" -o "$out" "$package")
  # A CLI configuration file named in the environment but absent makes the client warn before its version.
  said=$(env -u TF_CLI_CONFIG_FILE -u TOFU_CLI_CONFIG_FILE CHECKPOINT_DISABLE=1 "$out" version 2>&1 | head -n 1 || true)
  if [ "$said" != "$expected" ]; then
    echo "the binary built from $module says \"$said\", not \"$expected\""
    return 1
  fi
}

# Since 1.10 Terraform's remote-state backends (s3, gcs, azurerm, …) are Go modules nested in its repository, wired in
# by `replace … => ./internal/backend/remote-state/…`. A module download never contains nested modules and the
# module proxy serves none of them, so the build leaves those backends out (drop_missing_nested_modules); the tests
# keep state in the local backend, which is in the main module, like every other code path they exercise.
# `version.dev=no` marks a release build, as HashiCorp's release does (otherwise it says "-dev").
build_terraform() {
  build_client "github.com/hashicorp/terraform@v$TERRAFORM_VERSION" . \
    "-s -w -X github.com/hashicorp/terraform/version.dev=no" "Terraform v$TERRAFORM_VERSION" "$@"
}

# The same Terraform with its language experiments allowed (`main.experimentsAllowed`, experiments.go), which
# `-allow-deferral` needs in 1.16: the way to meet deferred actions outside HCP Terraform Stacks. The packages are
# the release build's (Go's build cache holds them); only the link differs.
build_terraform_experiments() {
  build_client "github.com/hashicorp/terraform@v$TERRAFORM_VERSION" . \
    "-s -w -X github.com/hashicorp/terraform/version.dev=no -X main.experimentsAllowed=yes" "Terraform v$TERRAFORM_VERSION" "$@"
}

# drop_missing_nested_modules DIR: in a module copy, removes the require and replace lines of nested modules whose
# replacement directory is absent, and from Go files outside tests, the imports of those modules and the lines that
# use them (Terraform's backend table). Fails if a use it does not know how to remove remains: go build says where.
drop_missing_nested_modules() {
  python3 - "$1" <<'PY'
import pathlib, re, sys
root = pathlib.Path(sys.argv[1])
gomod = root / "go.mod"
text = gomod.read_text()
missing = [m for m, d in re.findall(r"^replace\s+(\S+)\s+=>\s+(\./\S+)\s*$", text, re.M) if not (root / d).is_dir()]
if not missing:
    sys.exit(0)
names = "|".join(re.escape(m) for m in missing)
text = re.sub(rf"^\s*(replace\s+)?({names})\s.*\n", "", text, flags=re.M)
gomod.write_text(text)
for src in root.rglob("*.go"):
    if src.name.endswith("_test.go"):
        continue
    code = src.read_text()
    aliases = re.findall(rf'^\s*(\w+)\s+"({names})"\s*$', code, re.M)
    if not aliases:
        continue
    for alias, _ in aliases:
        code = re.sub(rf"^.*\b{alias}\b.*\n", "", code, flags=re.M)
    src.write_text(code)
    print(f"left out of {src.relative_to(root)}: {', '.join(m for _, m in aliases)}")
PY
}

# `version.dev=no` marks a release build, as OpenTofu's own release does (otherwise it says "-dev").
build_opentofu() {
  build_client "github.com/opentofu/opentofu@v$OPENTOFU_VERSION" ./cmd/tofu \
    "-s -w -X github.com/opentofu/opentofu/version.dev=no" "OpenTofu v$OPENTOFU_VERSION" "$@"
}

# Terraform 1.0.11 is the last 1.0 release; earlier 1.0 releases crash planning nested attributes (fixed in 1.0.5),
# so they prove nothing a user of 1.0 should rely on.
build_terraform_1_0() {
  build_client "github.com/hashicorp/terraform@v$TERRAFORM_1_0_VERSION" . "-s -w" "Terraform v$TERRAFORM_1_0_VERSION" "$@"
}

# HashiCorp's registry docs generator, which the registry's docs layout is defined by; docs/ is its output
# (scripts/docs.sh). Its go.mod has no replace directive, so `go install` builds it as published.
build_tfplugindocs() {
  local out=$1 work=$2
  GOBIN="$work" go install -trimpath -ldflags='-s -w' "github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@$TFPLUGINDOCS_VERSION"
  mv "$work/tfplugindocs" "$out"
}

cached_build "etcd $ETCD_VERSION" "$bin/etcd-$ETCD_VERSION" build_etcd
cached_build "kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $KUBERNETES_VERSION" "$bin/kubectl-$KUBERNETES_VERSION" build_kubernetes
cached_build "Terraform $TERRAFORM_VERSION" "$bin/terraform-$TERRAFORM_VERSION" build_terraform
cached_build "Terraform $TERRAFORM_VERSION with experiments" "$bin/terraform-$TERRAFORM_VERSION-experiments" build_terraform_experiments
cached_build "OpenTofu $OPENTOFU_VERSION" "$bin/tofu-$OPENTOFU_VERSION" build_opentofu
cached_build "Terraform $TERRAFORM_1_0_VERSION" "$bin/terraform-$TERRAFORM_1_0_VERSION" build_terraform_1_0
cached_build "tfplugindocs $TFPLUGINDOCS_VERSION" "$bin/tfplugindocs-$TFPLUGINDOCS_VERSION" build_tfplugindocs
ln -sfn "etcd-$ETCD_VERSION" "$bin/etcd"
ln -sfn "kube-apiserver-$KUBERNETES_VERSION" "$bin/kube-apiserver"
ln -sfn "kube-controller-manager-$KUBERNETES_VERSION" "$bin/kube-controller-manager"
ln -sfn "kube-scheduler-$KUBERNETES_VERSION" "$bin/kube-scheduler"
ln -sfn "kubectl-$KUBERNETES_VERSION" "$bin/kubectl"
ln -sfn "terraform-$TERRAFORM_VERSION" "$bin/terraform"
ln -sfn "tofu-$OPENTOFU_VERSION" "$bin/tofu"
ln -sfn "terraform-$TERRAFORM_1_0_VERSION" "$bin/terraform-1.0"
ln -sfn "terraform-$TERRAFORM_VERSION-experiments" "$bin/terraform-experiments"
ln -sfn "tfplugindocs-$TFPLUGINDOCS_VERSION" "$bin/tfplugindocs"
echo "$bin"
