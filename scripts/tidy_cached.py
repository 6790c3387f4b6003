#!/usr/bin/env python3
"""clang-tidy over FILES with a cache of clean results (scripts/lint).

usage: tidy_cached.py BUILD_DIR FILE...

clang-tidy took five of the test command's minutes on two cores, nearly all of it on files
that had not changed. A file is skipped when clang-tidy already passed it with exactly the
same input: the key hashes clang-tidy's version, the .clang-tidy file, the file's compile
flags (the checkout's path taken out) and its preprocessed text with comments kept (-E -C:
every header it includes and every NOLINT in them). Any change there runs clang-tidy again;
only a pass is recorded, so a failure is reported at every run. The cache lives in
$XDG_CACHE_HOME/feedplane/tidy (~/.cache by default), shared by clones on one machine as
ccache is; FEEDPLANE_TIDY_CACHE=0 turns it off.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys


def main() -> int:
    build, files = sys.argv[1], sys.argv[2:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = {os.path.realpath(e["file"]): e for e in json.load(f)}
    use_cache = os.environ.get("FEEDPLANE_TIDY_CACHE", "1") != "0"
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                         "feedplane", "tidy")
    os.makedirs(cache, exist_ok=True)
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True, text=True,
                             check=True).stdout
    with open(os.path.join(root, ".clang-tidy"), "rb") as f:
        config = f.read()

    def key_of(path: str):
        entry = commands.get(os.path.realpath(path))
        if entry is None:
            return None  # not compiled in this build: clang-tidy says so itself
        args = shlex.split(entry["command"])
        # The preprocessor alone: drop the output and the compile-only flags.
        pre, skip = [], False
        for a in args:
            if skip:
                skip = False
                continue
            if a in ("-o", "-MF", "-MT", "-MQ"):
                skip = True
                continue
            if a in ("-c", "-MD", "-MMD"):
                continue
            pre.append(a)
        out = subprocess.run(pre + ["-E", "-C", "-o", "-"], cwd=entry["directory"],
                             capture_output=True)
        if out.returncode != 0:
            return None  # let clang-tidy report it
        h = hashlib.sha256()
        for part in (version.encode(), config, " ".join(pre).replace(root, ".").encode(),
                     out.stdout.replace(root.encode(), b".")):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
        return h.hexdigest()

    def check(path: str):
        key = key_of(path) if use_cache else None
        if key is not None and os.path.exists(os.path.join(cache, key)):
            return path, 0, "", True
        r = subprocess.run(["clang-tidy", "-p", build, "--quiet", path], capture_output=True,
                           text=True)
        if r.returncode == 0 and key is not None:
            with open(os.path.join(cache, key), "w") as f:
                f.write(path + "\n")
        return path, r.returncode, r.stdout, False

    failed, cached = 0, 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for path, rc, out, hit in pool.map(check, files):
            cached += hit
            if rc != 0:
                failed += 1
                sys.stdout.write(out)
                print(f"clang-tidy: {path} failed", file=sys.stderr)
    print(f"clang-tidy: {len(files)} files, {cached} unchanged since a clean run, "
          f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
