"""Lets a fresh clone reuse the test cache's cargo target directory: cargo decides what to rebuild by modification
times, and a clone gives every file the time of the clone, so each CI run rebuilt every crate of the workspace
(about 150 s of two cores) even where no file had changed.

Usage: source-mtimes.py restore|record STAMPS (run from the repository's top directory)

record: after the Rust builds succeeded, writes each tracked file's git blob and modification time to STAMPS.
restore: gives each tracked file whose blob is the one recorded its recorded modification time, so that cargo finds
  the crates whose files are all unchanged up to date and rebuilds the others (their changed files keep the clone's
  time). STAMPS is removed first, whatever happens next: a build that fails half-way leaves artefacts of files that
  the record does not describe, so the run after it rebuilds everything (nothing is recorded until the builds pass).
  Both skip, with a line saying why, when the tree has changes not committed (the index's blob would not be the
  file's content).
"""
import os
import subprocess
import sys


def tracked():
    """(path, blob) of every tracked file."""
    listed = subprocess.run(["git", "ls-files", "-s", "-z"], capture_output=True, check=True).stdout
    for entry in listed.split(b"\0"):
        if entry:
            meta, _, path = entry.partition(b"\t")
            yield path.decode(), meta.split()[1].decode()


def uncommitted():
    """Whether tracked files differ from the commit: then the index's blobs do not describe what cargo built."""
    return bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True).stdout.strip())


def record(stamps):
    if uncommitted():
        print("[source-mtimes] the tree has uncommitted changes: nothing recorded", file=sys.stderr)
        return
    with open(stamps + ".new", "w") as out:
        for path, blob in tracked():
            try:
                out.write(f"{path}\t{blob}\t{os.lstat(path).st_mtime_ns}\n")
            except FileNotFoundError:
                pass  # deleted in the work tree: not a cargo input
    os.replace(stamps + ".new", stamps)


def restore(stamps):
    try:
        with open(stamps) as f:
            recorded = {path: (blob, int(ns)) for path, blob, ns in (line.rstrip("\n").split("\t") for line in f)}
    except FileNotFoundError:
        print("[source-mtimes] no record of the last build: cargo rebuilds the workspace's crates", file=sys.stderr)
        return
    except ValueError:
        recorded = {}
    finally:
        try:
            os.remove(stamps)
        except FileNotFoundError:
            pass
    if uncommitted():
        print("[source-mtimes] the tree has uncommitted changes: modification times left as they are", file=sys.stderr)
        return
    files = list(tracked())
    same = 0
    for path, blob in files:
        if recorded.get(path, ("", 0))[0] == blob:
            ns = recorded[path][1]
            os.utime(path, ns=(ns, ns), follow_symlinks=False)
            same += 1
    print(f"[source-mtimes] {same} files as the last build saw them; cargo rebuilds the crates of the other "
          f"{len(files) - same}", file=sys.stderr)


if __name__ == "__main__":
    command, stamps = sys.argv[1:3]
    {"record": record, "restore": restore}[command](stamps)
