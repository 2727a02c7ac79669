"""Runs the built test binaries of the test command, several at once, and prints where the time went.

Usage: run-tests.py PLAN OUT_DIR TIMES [SPLIT...]

PLAN is test-lanes.py's output (lane, package directory, label, executable per line). Every binary runs in its
package directory, the way cargo test runs it, with its output kept in OUT_DIR/<n>.log and printed whole (after
cargo's own "Running" line) once it ends, so that outputs never interleave and the summary can read cargo's
"test result:" lines. The doc tests run as one more job (cargo test --workspace --doc).

Each SPLIT names a test file (e.g. real_fabric for tests/real_fabric.rs) whose tests run as processes of their own
(`<binary> --exact <test>`), each with a ground of its own, instead of one after the other on the binary's shared
ground: for files whose tests cannot share one ground at the same time (they build the same peering).

Why at once: a real-Liqo test binary spends most of its time waiting on Liqo's controllers, kwok's heartbeats and
Terraform's own start-up; its ground uses little CPU then. Each real binary starts its own ground (Ground::shared
is per process), so binaries cannot see each other's objects. Limits, both from the environment:
  LIQO_TEST_REAL_JOBS  real-Liqo binaries at once (default: one per 3 GiB of available memory, at most 2 per
                       core, at least 1)
  LIQO_TEST_JOBS       binaries at once in all (default: real jobs + 1)
The longest binaries start first: TIMES (a file in the test cache) keeps each binary's last duration; binaries
never timed start before the timed ones, real-Liqo binaries first.

Writes lane logs OUT_DIR/light.log and OUT_DIR/real.log, updates TIMES, prints the ten slowest binaries (also kept
in OUT_DIR/slowest.txt for the test command's summary), and exits non-zero if any binary failed.
"""
import os
import subprocess
import sys
import time

plan_file, out_dir, times_file = sys.argv[1:4]
split = set(sys.argv[4:])


def available_gib():
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1048576
    return 4.0


def env_int(name, default):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        sys.exit(f"{name}={value!r}: expected a whole number of at least 1")
    return int(value)


cores = os.cpu_count() or 1
real_jobs = env_int("LIQO_TEST_REAL_JOBS", max(1, min(2 * cores, int(available_gib() // 3))))
all_jobs = env_int("LIQO_TEST_JOBS", real_jobs + 1)

previous = {}
try:
    with open(times_file) as f:
        for line in f:
            key, _, seconds = line.rstrip("\n").rpartition("\t")
            if key:
                previous[key] = float(seconds)
except (OSError, ValueError):
    pass

jobs = []
with open(plan_file) as f:
    for line in f:
        lane, directory, label, exe = line.rstrip("\n").split("\t")
        # A key that stays the same across builds: unit tests are all "unittests src/lib.rs", so the package too.
        key = f"{os.path.relpath(directory)}: {label}"
        stem = os.path.splitext(os.path.basename(label))[0]
        if label.startswith("tests/") and stem in split:
            listed = subprocess.run([exe, "--list", "--format", "terse"], cwd=directory, capture_output=True,
                                    text=True, check=True).stdout
            tests = [line[:-len(": test")] for line in listed.splitlines() if line.endswith(": test")]
            if not tests:
                sys.exit(f"{label}: listed no test to split (output of --list: {listed!r})")
            for test in tests:
                jobs.append({"n": len(jobs), "lane": lane, "dir": directory, "label": label, "key": f"{key} {test}",
                             "command": [exe, "--exact", test]})
        else:
            jobs.append({"n": len(jobs), "lane": lane, "dir": directory, "label": label, "key": key,
                         "command": [exe]})
jobs.append({
    "n": len(jobs), "lane": "light", "dir": os.getcwd(), "label": "Doc-tests (cargo test --workspace --doc)",
    "key": "doc tests",
    "command": ["cargo", "test", "--no-fail-fast", "--workspace", "--doc"],
})
# Longest first; never timed first of all (a new binary may be long), real before light among equals.
jobs.sort(key=lambda j: (j["key"] in previous, -previous.get(j["key"], 0.0), j["lane"] != "real", j["n"]))

print(f"[tests] {len(jobs)} test binaries, up to {all_jobs} at once ({real_jobs} with a real-Liqo ground); "
      f"{cores} cores, {available_gib():.0f} GiB available", flush=True)

lane_logs = {lane: open(os.path.join(out_dir, f"{lane}.log"), "w") for lane in ("light", "real")}
pending = list(jobs)
running = {}
durations = {}
failed = []
began = time.monotonic()


def start(job):
    log = open(os.path.join(out_dir, f"{job['n']}.log"), "w+")
    env = dict(os.environ, CARGO_MANIFEST_DIR=job["dir"])
    job["log"] = log
    job["began"] = time.monotonic()
    job["process"] = subprocess.Popen(job["command"], cwd=job["dir"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
    running[job["process"].pid] = job
    print(f"[tests] {time.monotonic() - began:5.0f}s  started {job['key']}", flush=True)


def finish(job, status):
    seconds = time.monotonic() - job["began"]
    durations[job["key"]] = seconds
    log = job["log"]
    log.seek(0)
    output = log.read()
    log.close()
    exe = job["command"][0]
    header = f"   {job['label']}" if exe == "cargo" else f"     Running {job['label']} ({os.path.relpath(exe)})"
    text = f"{header}\n{output}"
    lane_logs[job["lane"]].write(text)
    lane_logs[job["lane"]].flush()
    sys.stdout.write(text)
    verdict = "ok" if status == 0 else f"FAILED (exit status {status})"
    if status != 0:
        failed.append(job["key"])
    print(f"[tests] {time.monotonic() - began:5.0f}s  {verdict}: {job['key']} in {seconds:.0f}s", flush=True)


while pending or running:
    real_running = sum(1 for j in running.values() if j["lane"] == "real")
    startable = [j for j in pending if j["lane"] != "real" or real_running < real_jobs]
    if startable and len(running) < all_jobs:
        job = startable[0]
        pending.remove(job)
        start(job)
        continue
    pid, wait_status = os.wait()
    job = running.pop(pid, None)
    if job is not None:
        finish(job, os.waitstatus_to_exitcode(wait_status))

for log in lane_logs.values():
    log.close()

previous.update(durations)
try:
    os.makedirs(os.path.dirname(times_file), exist_ok=True)
    with open(times_file, "w") as f:
        for key, seconds in sorted(previous.items()):
            f.write(f"{key}\t{seconds:.1f}\n")
except OSError as e:
    print(f"[tests] could not record the binaries' times in {times_file}: {e}", file=sys.stderr)

lanes = {j["key"]: j["lane"] for j in jobs}
slowest = "".join(f"  {seconds:6.0f}s  {key} ({lanes[key]} lane)\n"
                  for key, seconds in sorted(durations.items(), key=lambda item: -item[1])[:10])
with open(os.path.join(out_dir, "slowest.txt"), "w") as f:
    f.write(slowest)
print(f"\n[tests] all {len(jobs)} test binaries in {time.monotonic() - began:.0f}s; the ten slowest:\n{slowest}", end="")
if failed:
    print(f"[tests] failed: {', '.join(failed)}")
sys.exit(1 if failed else 0)
