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
Terraform's own start-up, and each has grounds of its own (Ground::shared is per process; a ground handed on, see
below, is held by one binary at a time and checked between them), so binaries cannot see each other's objects.
But a ground is not free: each control plane keeps about 5% of a core busy while idle,
and a binary may start several (one per client, the hub's four clusters). So the next binary starts only while the
machine has room, measured rather than guessed: at least MIN_IDLE of the CPU idle over the last seconds, at least
4 GiB of memory available, for a real-Liqo binary MIN_INOTIFY free inotify instances, and some seconds after the
previous start (a ground's start-up load shows only then).
The client matrix: LIQO_TEST_MATRIX (`one`, each real-Liqo scenario with the client acceptance-tests/src/tf/
assignment.rs gives it; `full`, every client) reaches the real-Liqo binaries only; the light ones run every client.
Limits, from the environment:
  LIQO_TEST_JOBS      binaries at once at most (default 8)
  LIQO_TEST_MIN_IDLE  idle CPU share needed to start one more (default 0.35)
The longest binaries start first: TIMES (a file in the test cache) keeps each binary's last duration, and
test-times.seed.tsv beside this script (a warm run's TIMES, kept in the repository) stands in for a binary TIMES
does not list; binaries timed in neither start before the others, real-Liqo binaries first. While the ground
pool (below) has a ready ground, the longest binary that takes one starts first instead: one that held pool grounds
in its last run (kept in test-grounds.tsv beside TIMES) or never ran.

Where the machine's CPU goes: as root, each binary runs in a cgroup of its own (cgroup v1 `cpuacct`, else cgroup v2),
which its grounds' processes, Terraform and the providers inherit, so the summary gives each binary's CPU-seconds
beside its time. On a machine whose cores are busy throughout, the sum of those, not the longest binary, bounds the
run.

Grounds handed on: a real-Liqo binary gets LIQO_GROUND_POOL=OUT_DIR/ground-pool (see acceptance-tests/src/ground/
pool.rs). Its milan + rome grounds (Ground::shared, each extra client's) come from there when one is ready, else
it starts them there, detached. When it has ended, each ground it held is checked (`liqo-ground reuse`: its
processes up, the same objects as right after its start once the ForeignClusters Liqo keeps after an unpeer are
deleted; it also fails for a ground whose start never finished); if it passed and the ground is unchanged, the next binary may take it,
else the ground is stopped. A ground's start costs about 15 CPU-seconds, and one binary at a time uses a ground. A
ready ground no binary takes within GroundPool.IDLE_LIMIT is stopped: idle, it costs about 4 CPU-seconds a minute.
The grounds' processes then move to a cgroup of the pool's own, counted apart in the summary. Ready grounds are
stopped once no real-Liqo binary is left to start, and every pool ground at the end.

Writes lane logs OUT_DIR/light.log and OUT_DIR/real.log, updates TIMES (and test-cpu.tsv beside it: each binary's
CPU-seconds), prints the ten slowest binaries (also kept
in OUT_DIR/slowest.txt for the test command's summary), and exits non-zero if any binary failed.
"""
import collections
import json
import os
import shutil
import signal
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


def cpu_times():
    """(idle, total) jiffies of all CPUs since boot."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    return fields[3] + fields[4], sum(fields)


class CpuAccounting:
    """One cgroup per test binary, to read the CPU time of the binary and everything it started (its grounds'
    processes die after it, by PDEATHSIG, so the cgroups are read and removed at the end of the run)."""

    def __init__(self):
        v1, v2 = "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup"
        if os.path.exists(os.path.join(v1, "cpuacct.usage")):
            self.root, self.usage = v1, self._usage_v1
        elif os.path.exists(os.path.join(v2, "cgroup.controllers")):
            self.root, self.usage = v2, self._usage_v2
        else:
            self.root = None
        self.groups = {}
        if self.root is not None:
            try:
                probe = os.path.join(self.root, f"liqo-tests-{os.getpid()}")
                os.mkdir(probe)
                os.rmdir(probe)
            except OSError:
                self.root = None
        self.why_not = None if self.root else "no cgroup this user may create (as root it would be measured)"

    @staticmethod
    def _usage_v1(group):
        with open(os.path.join(group, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9

    @staticmethod
    def _usage_v2(group):
        with open(os.path.join(group, "cpu.stat")) as f:
            for line in f:
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        return 0.0

    def _group(self, key):
        """The cgroup of `key`, made on first use."""
        if key not in self.groups:
            self.groups[key] = os.path.join(self.root, f"liqo-tests-{os.getpid()}-{len(self.groups)}")
            os.mkdir(self.groups[key])
        return self.groups[key]

    def enter(self, key):
        """A preexec_fn that moves the starting binary into a fresh cgroup for `key`; None without cgroups."""
        if self.root is None:
            return None
        group = self._group(key)

        def move():
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

        return move

    def adopt(self, key, pids):
        """Moves running processes into the cgroup of `key` (made on first use), e.g. a ground that outlives the
        binary that started it."""
        if self.root is None:
            return
        group = self._group(key)
        for pid in pids:
            try:
                with open(os.path.join(group, "cgroup.procs"), "w") as f:
                    f.write(str(pid))
            except OSError:
                pass  # it ended meanwhile

    def collect(self):
        """CPU-seconds per key, once every process of the run has ended; removes the cgroups."""
        seconds = {}
        for key, group in self.groups.items():
            for _ in range(100):
                try:
                    seconds[key] = self.usage(group)
                    os.rmdir(group)
                    break
                except OSError:
                    time.sleep(0.2)
        return seconds


def env_number(name, default, kind):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = kind(value)
    except ValueError:
        number = 0
    if number <= 0:
        sys.exit(f"{name}={value!r}: expected a positive number")
    return number


cores = os.cpu_count() or 1
max_jobs = env_number("LIQO_TEST_JOBS", 8, int)
min_idle = env_number("LIQO_TEST_MIN_IDLE", 0.35, float)
# A real-Liqo ground's start-up takes several seconds of CPU: the next start waits for it to show in the idle
# share, measured over the last IDLE_WINDOW seconds.
SPACING = {"real": 8.0, "light": 1.0}
IDLE_WINDOW = 5
MIN_GIB = 4.0
# Every control plane process and gateway holds an inotify instance (fs.inotify.max_user_instances, often 128); a
# wireguard-go that gets none exits and its tunnel never carries traffic. A real-Liqo binary may start five
# two-cluster grounds (one per client) or a hub of four clusters: about six instances a cluster.
MIN_INOTIFY = 60



def read_tsv(path, kind):
    """KEY<TAB>VALUE lines of `path`, as a dict; empty when the file is missing or damaged."""
    values = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.rstrip("\n").rpartition("\t")
                if key:
                    values[key] = kind(value)
    except (OSError, ValueError):
        pass
    return values


def write_tsv(path, values, form):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            for key, value in sorted(values.items()):
                f.write(f"{key}\t{form(value)}\n")
    except OSError as e:
        print(f"[tests] could not write {path}: {e}", file=sys.stderr)


previous = read_tsv(times_file, float)
# Where TIMES has no time for a binary (a cold cache, a machine's first run), the times of a warm run kept in the
# repository order it: never timed anywhere, every binary would start in plan order, and the long light ones
# (faults, concurrency) last of all, as in a cold run before it (its last binaries started after 1,240 s).
SEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "test-times.seed.tsv")
# The checkout's acceptance-tests/: what liqo-ground reads as CARGO_MANIFEST_DIR to find the repository.
acceptance_tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
expected = dict(read_tsv(SEED, float), **previous)
# How many pool grounds each real-Liqo binary held in its last run (taken or started), beside TIMES.
# (A run of the whole matrix keeps its own TIMES, test-times-full.tsv, and so its own files beside it.)
grounds_file = times_file.replace("test-times", "test-grounds")
held_before = read_tsv(grounds_file, int)
held = {}

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
jobs.sort(key=lambda j: (j["key"] in expected, -expected.get(j["key"], 0.0), j["lane"] != "real", j["n"]))

POOL_KEY = "ground pool (grounds between binaries)"


class GroundPool:
    """The grounds handed from one real-Liqo binary to the next (see the module's docstring)."""

    # An idle milan + rome ground costs about 4 CPU-seconds a minute, a start about 15. A binary that takes a ground
    # mostly starts right after another one ended (the CPU it frees); one that waits longer waits minutes (measured:
    # with 240 s here, 11 of 14 grounds were stopped unused, 56 ground-minutes of waiting in a run, as much CPU as
    # the 17 takes saved).
    IDLE_LIMIT = 60.0

    def __init__(self, directory, ground_bin):
        self.dir, self.bin = directory, ground_bin
        for part in ("grounds", "ready", "taken", "expired"):
            os.makedirs(os.path.join(directory, part), exist_ok=True)
        self.handed_on = self.stopped = self.unused = 0
        # When each ready ground became ready; how long grounds waited ready in all (ground-seconds).
        self.ready_since, self.waited = {}, 0.0

    def _run(self, command, ground):
        return subprocess.run([self.bin, command, "--dir", os.path.join(self.dir, "grounds", ground)],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, CARGO_MANIFEST_DIR=acceptance_tests_dir))

    def _pids(self, ground):
        """The ground's recorded processes and all their descendants (the kubelet's Liqo processes)."""
        try:
            with open(os.path.join(self.dir, "grounds", ground, "ground.json")) as f:
                wanted = {record["pid"] for record in json.load(f)["processes"]}
        except (OSError, ValueError, KeyError):
            return []
        children = collections.defaultdict(list)
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    children[int(f.read().rsplit(")", 1)[1].split()[1])].append(int(pid))
            except (OSError, ValueError, IndexError):
                pass
        found, todo = set(), list(wanted)
        while todo:
            pid = todo.pop()
            if pid not in found:
                found.add(pid)
                todo.extend(children.get(pid, []))
        return sorted(found)

    def stop(self, ground, why):
        self._run("down", ground)
        # As a ground a test drops (LIQO_KEEP_GROUND_LOGS): its logs stay with the run, etcd's data goes.
        if not os.environ.get("LIQO_KEEP_GROUND"):
            shutil.rmtree(os.path.join(self.dir, "grounds", ground, "_etcd"), ignore_errors=True)
        self.stopped += 1
        print(f"[tests] ground pool: stopped {ground} ({why})", flush=True)

    def hand_back(self, job, passed):
        """After `job` ended: each ground it held goes back to the pool if it passed and the ground is unchanged."""
        pid = str(job["process"].pid)
        held.setdefault(job["key"], 0)
        for mark in os.listdir(os.path.join(self.dir, "taken")):
            ground, _, holder = mark.rpartition(".")
            if holder != pid:
                continue
            os.remove(os.path.join(self.dir, "taken", mark))
            held[job["key"]] += 1
            if not passed:
                self.stop(ground, f"{job['key']} failed; its logs stay in the ground's directory")
                continue
            check = self._run("reuse", ground)
            if check.returncode != 0:
                changed = (check.stdout + check.stderr).strip().replace("\n", "\n      ")
                self.stop(ground, f"{job['key']} left it changed:\n      {changed}")
                continue
            cpu.adopt(POOL_KEY, self._pids(ground))
            self.ready_since[ground] = time.monotonic()
            open(os.path.join(self.dir, "ready", ground), "w").close()
            self.handed_on += 1
            print(f"[tests] ground pool: {ground} is as it was started; the next binary may take it", flush=True)

    def tick(self):
        """Counts the waits of grounds taken since the last tick, and stops a ground that has waited ready longer
        than a start costs (IDLE_LIMIT)."""
        now = time.monotonic()
        ready = set(os.listdir(os.path.join(self.dir, "ready")))
        for ground, since in list(self.ready_since.items()):
            if ground not in ready:
                self.waited += now - self.ready_since.pop(ground)
            elif now - since > self.IDLE_LIMIT:
                self.stop_ready(f"ready for {now - since:.0f}s, no binary took it", [ground])

    def stop_ready(self, why, grounds=None):
        for ground in grounds if grounds is not None else os.listdir(os.path.join(self.dir, "ready")):
            # A binary may take it at this very moment: the rename succeeds for one of the two.
            try:
                os.rename(os.path.join(self.dir, "ready", ground), os.path.join(self.dir, "expired", ground))
            except OSError:
                continue
            self.waited += time.monotonic() - self.ready_since.pop(ground, time.monotonic())
            self.unused += 1
            self.stop(ground, why)

    def any_ready(self):
        return bool(os.listdir(os.path.join(self.dir, "ready")))

    def stop_all(self):
        for ground in os.listdir(os.path.join(self.dir, "grounds")):
            self._run("down", ground)


print(f"[tests] {len(jobs)} test binaries, up to {max_jobs} at once while at least {min_idle:.0%} of the CPU is idle "
      f"and {MIN_GIB:.0f} GiB available; {cores} cores, {available_gib():.0f} GiB available now", flush=True)

cpu = CpuAccounting()
real_exes = [j["command"][0] for j in jobs if j["lane"] == "real"]
ground_bin = os.path.join(os.path.dirname(os.path.dirname(real_exes[0])), "liqo-ground") if real_exes else None
pool = GroundPool(os.path.join(out_dir, "ground-pool"), ground_bin) if ground_bin and os.path.isfile(ground_bin) \
    else None
machine_began = cpu_times()
lane_logs = {lane: open(os.path.join(out_dir, f"{lane}.log"), "w") for lane in ("light", "real")}
pending = list(jobs)
running = {}
durations = {}
failed = []
began = time.monotonic()


def start(job):
    log = open(os.path.join(out_dir, f"{job['n']}.log"), "w+")
    # A test binary gets the variable cargo test would give it. Not cargo itself: build scripts (ring's) track it,
    # and a value cargo did not set made the doc-test job rebuild half the dependency tree, and the next run's
    # builds rebuild it back.
    env = dict(os.environ) if job["command"][0] == "cargo" else dict(os.environ, CARGO_MANIFEST_DIR=job["dir"])
    if pool and job["lane"] == "real":
        env["LIQO_GROUND_POOL"] = pool.dir
    # The tests record their lane beside each client they run (the summary's scenario list); the client matrix
    # (LIQO_TEST_MATRIX, src/tf/assignment.rs) narrows the real-Liqo binaries only: the light lane runs every client.
    env["LIQO_TEST_LANE"] = job["lane"]
    if job["lane"] != "real":
        env.pop("LIQO_TEST_MATRIX", None)
    job["log"] = log
    job["began"] = time.monotonic()
    job["process"] = subprocess.Popen(job["command"], cwd=job["dir"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, preexec_fn=cpu.enter(job["key"]))
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
    if pool and job["lane"] == "real":
        pool.hand_back(job, status == 0)
        if not any(j["lane"] == "real" for j in pending):
            pool.stop_ready("no real-Liqo binary is left to start")



def stop_all(signum, _frame):
    """A stopped run stops its test processes (their grounds die with them)."""
    for job in running.values():
        job["process"].kill()
    if pool:
        pool.stop_all()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, stop_all)
signal.signal(signal.SIGINT, stop_all)
signal.signal(signal.SIGHUP, stop_all)


def free_inotify():
    with open("/proc/sys/fs/inotify/max_user_instances") as f:
        limit = int(f.read())
    used = 0
    for pid in os.listdir("/proc"):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                used += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify"
            except OSError:
                pass
    return limit - used


def has_room(idle_share, lane):
    if not running:
        return True
    if len(running) >= max_jobs or idle_share < min_idle or available_gib() < MIN_GIB:
        return False
    return lane != "real" or free_inotify() >= MIN_INOTIFY


def takes_ground(job):
    """Whether `job` held pool grounds in its last run (a binary never run may)."""
    return job["lane"] == "real" and held_before.get(job["key"], 1) > 0


def next_job():
    """The longest pending binary; while the pool has a ready ground, the longest that takes one (it starts no
    ground, so the next start need not wait for a ground's start-up load to show either)."""
    if pool and pool.any_ready():
        for job in pending:
            if takes_ground(job):
                return job, SPACING["light"]
    return pending[0], SPACING[pending[0]["lane"]]


next_start = 0.0
samples = collections.deque([cpu_times()], maxlen=IDLE_WINDOW + 1)
idle_share = 1.0
while pending or running:
    now = time.monotonic()
    job, spacing = next_job() if pending else (None, 0)
    if job and now >= next_start and has_room(idle_share, job["lane"]):
        pending.remove(job)
        start(job)
        next_start = now + spacing
        continue
    # Reap whatever ended, then measure the idle share over the last second.
    time.sleep(1.0)
    while running:
        pid, wait_status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            break
        job = running.pop(pid, None)
        if job is not None:
            finish(job, os.waitstatus_to_exitcode(wait_status))
    if pool:
        pool.tick()
    samples.append(cpu_times())
    (idle_then, total_then), (idle_now, total_now) = samples[0], samples[-1]
    if total_now > total_then:
        idle_share = (idle_now - idle_then) / (total_now - total_then)

for log in lane_logs.values():
    log.close()
if pool:
    pool.stop_all()

# A failed binary's time is not its time: one that fails at its first step ends in seconds, and the next run starts
# it last (after a run whose tests failed at their first step, the next one started faults.rs and simulator.rs,
# 228 and 150 s, at 1,474 and 1,492 s of 1,702: the machine was half idle for their last minutes).
previous.update((key, seconds) for key, seconds in durations.items() if key not in failed)
write_tsv(times_file, previous, lambda seconds: f"{seconds:.1f}")
if pool:
    held_before.update(held)
    write_tsv(grounds_file, held_before, str)

elapsed = time.monotonic() - began
(idle_then, total_then), (idle_now, total_now) = machine_began, cpu_times()
ticks = os.sysconf("SC_CLK_TCK")
machine_busy = ((total_now - idle_now) - (total_then - idle_then)) / ticks
cpu_seconds = cpu.collect()
lanes = {j["key"]: j["lane"] for j in jobs}
if cpu_seconds:
    # Every binary's CPU of the last run, beside its time (the summary prints the costliest ten).
    costs_file = times_file.replace("test-times", "test-cpu")
    write_tsv(costs_file, dict(read_tsv(costs_file, float), **cpu_seconds), lambda seconds: f"{seconds:.0f}")


def cpu_column(key):
    return f"{cpu_seconds[key]:6.0f} CPU-s" if key in cpu_seconds else ""


slowest = "".join(f"  {seconds:6.0f}s {cpu_column(key)}  {key} ({lanes[key]} lane)\n"
                  for key, seconds in sorted(durations.items(), key=lambda item: -item[1])[:10])
if cpu_seconds:
    costliest = sorted(cpu_seconds.items(), key=lambda item: -item[1])[:10]
    slowest += (f"  CPU: the binaries (and the ground pool) used {sum(cpu_seconds.values()):.0f} CPU-seconds, "
                f"the whole machine {machine_busy:.0f} of the {cores * elapsed:.0f} its {cores} cores had in these {elapsed:.0f}s "
                f"({machine_busy / (cores * elapsed):.0%}); the costliest: "
                + ", ".join(f"{key.rpartition('/')[2]} {seconds:.0f}" for key, seconds in costliest) + "\n")
else:
    slowest += f"  CPU: the whole machine used {machine_busy:.0f} of {cores * elapsed:.0f} CPU-seconds " \
               f"({machine_busy / (cores * elapsed):.0%}); per binary: not measured, {cpu.why_not}\n"
if pool:
    started = len(os.listdir(os.path.join(pool.dir, "grounds")))
    slowest += (f"  ground pool: {started} milan + rome grounds started into it, taken {pool.handed_on - pool.unused} "
                f"times instead of a start, {pool.stopped - pool.unused} not handed on (why: the real lane's log), "
                f"{pool.unused} stopped unused; grounds waited {pool.waited / 60:.0f} ground-minutes ready in all"
                + (f"; their CPU while between or in binaries that took them: {cpu_seconds[POOL_KEY]:.0f} CPU-s"
                   if POOL_KEY in cpu_seconds else "") + "\n")
with open(os.path.join(out_dir, "slowest.txt"), "w") as f:
    f.write(slowest)
print(f"\n[tests] all {len(jobs)} test binaries in {elapsed:.0f}s; the ten slowest:\n{slowest}", end="")
if failed:
    print(f"[tests] failed: {', '.join(failed)}")
sys.exit(1 if failed else 0)
