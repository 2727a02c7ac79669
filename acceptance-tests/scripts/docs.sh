#!/usr/bin/env bash
# Writes docs/ (the Terraform and OpenTofu registries' documentation) with HashiCorp's tfplugindocs, the tool the
# registry's docs layout is defined by, from the provider's own schema, the templates under templates/ and the
# example files under examples/.
#
# The schema is what a user's client sees: the pinned Terraform's `terraform providers schema -json` against the
# provider binary built from this checkout (a dev override, so nothing is installed). tfplugindocs looks the schema up
# by the provider's short name, so the file it reads holds the provider under `liqo`.
#
# Usage: docs.sh            regenerates docs/ in place, then validates it
#        docs.sh --check    regenerates into a scratch copy, exits 1 listing the pages that differ from docs/, and
#                           runs `tfplugindocs validate` (the test command's lint step)
# Env:   LIQO_TEST_CACHE    cache of the pinned binaries (see build-upstream.sh), CARGO_TARGET_DIR as cargo's
set -euo pipefail

case "${1:-}" in
  "") check=false ;;
  --check) check=true ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$("$here/build-upstream.sh" | tail -n 1)
target=${CARGO_TARGET_DIR:-$root/target}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# The workspace's binaries, as the test command builds them: cargo unifies dependency features over the packages
# it builds, so a provider-only build compiles another copy of the dependencies the acceptance crate turns more
# features on in (sha2, rustix, kube; 134 s of a cold test command on two cores), where this build reuses them.
cargo build --quiet --locked --manifest-path "$root/Cargo.toml" --workspace --bins

mkdir -p "$scratch/config"
cat >"$scratch/cli.tfrc" <<EOF
provider_installation {
  dev_overrides {
    "liqotech/liqo" = "$target/debug"
  }
  direct {}
}
EOF
cat >"$scratch/config/main.tf" <<'EOF'
terraform {
  required_providers {
    liqo = { source = "liqotech/liqo" }
  }
}
EOF
# With a dev override the client needs no `init`; it warns about the override on stderr, which says nothing here.
(cd "$scratch/config" && TF_CLI_CONFIG_FILE="$scratch/cli.tfrc" CHECKPOINT_DISABLE=1 "$bin/terraform" providers schema -json) \
  >"$scratch/registry.json" 2>"$scratch/terraform.log" || { cat "$scratch/terraform.log" >&2; exit 1; }
# The pages show what the provider's declarations say (provider/src/attributes.rs): a top-level attribute whose
# description opens with REQUIRED_NOTE is required (the provider checks it, so Terraform's schema calls it
# optional); one that opens with REMOVED_NOTE is a name of the Go provider 0.x, listed in the upgrade guide instead.
python3 - "$scratch/registry.json" "$scratch/schema.json" <<'PY'
import json, sys
REQUIRED_NOTE = "Required. "
REMOVED_NOTE = "Removed (a name of the Go provider 0.x). "
doc = json.load(open(sys.argv[1]))
schemas = doc["provider_schemas"]["registry.terraform.io/liqotech/liqo"]
blocks = [schemas["provider"]["block"]] + [
    s["block"] for kind in ("resource_schemas", "data_source_schemas") for s in schemas.get(kind, {}).values()
]
for block in blocks:
    attributes = block.get("attributes", {})
    for name, a in list(attributes.items()):
        description = a.get("description", "")
        if description.startswith(REMOVED_NOTE):
            del attributes[name]
        elif description.startswith(REQUIRED_NOTE):
            a.pop("optional", None)
            a["required"] = True
            a["description"] = description[len(REQUIRED_NOTE):]
doc["provider_schemas"] = {"liqo": schemas}
json.dump(doc, open(sys.argv[2], "w"))
PY

if $check; then
  site=$scratch/site
  mkdir -p "$site"
  cp -r "$root/templates" "$root/examples" "$site/"
else
  site=$root
fi

tfplugindocs() {
  local what=$1
  shift
  "$bin/tfplugindocs" "$what" --provider-dir "$site" --provider-name liqo --providers-schema "$scratch/schema.json" "$@" \
    >"$scratch/tfplugindocs.log" 2>&1 || { cat "$scratch/tfplugindocs.log" >&2; echo "tfplugindocs $what failed" >&2; exit 1; }
}
tfplugindocs generate
tfplugindocs validate

if $check; then
  if ! diff -r -q "$root/docs" "$site/docs" >"$scratch/diff" 2>&1; then
    sed -E -e "s|^Files $root/(.*) and .* differ$|  differs: \1|" \
      -e "s|^Only in $site/(.*): (.*)$|  missing: \1/\2|" -e "s|^Only in $root/(.*): (.*)$|  not generated: \1/\2|" \
      "$scratch/diff" >&2
    echo "docs/ is not what tfplugindocs generates from the schema, templates/ and examples/: run acceptance-tests/scripts/docs.sh" >&2
    exit 1
  fi
  echo "docs/ is up to date (tfplugindocs generate and validate)"
fi
