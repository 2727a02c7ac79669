"""Reads `cargo test --no-run --message-format=json` on stdin and prints one line per test binary:
lane, package directory, the label cargo test prints for it, executable.

Usage: test-lanes.py ACCEPTANCE_TESTS_DIR LIGHT_TEST... — the named files of ACCEPTANCE_TESTS_DIR and every test
binary outside it (unit tests, other packages' tests) go to the light lane; every other acceptance test file
needs real Liqo and goes to the real lane. Exits non-zero if the build failed.
"""
import json
import os
import sys

tests_dir = os.path.realpath(sys.argv[1])
light = set(sys.argv[2:])
built_ok = True
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if message.get("reason") == "build-finished":
        built_ok = message.get("success", False)
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    if not message["profile"]["test"]:
        continue
    target = message["target"]
    package_dir = os.path.dirname(message["manifest_path"])
    source = os.path.realpath(target["src_path"])
    relative = os.path.relpath(source, package_dir)
    if "test" in target["kind"]:
        label = relative
        name = os.path.splitext(os.path.basename(source))[0]
        lane = "real" if os.path.dirname(source) == tests_dir and name not in light else "light"
    else:
        label = "unittests " + relative
        lane = "light"
    print("\t".join([lane, package_dir, label, message["executable"]]))
sys.exit(0 if built_ok else 1)
