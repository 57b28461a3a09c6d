#!/usr/bin/env python3
"""A test agent that changes its working directory between model calls.

Before each of its three calls it writes, edits, renames, deletes and
links files, then prints one line, "MANIFEST N {json}", with what its
folder holds at that moment (path: "f <sha256>", "d" or "l <target>"),
so a test can compare the workspace a tape rebuilds at call N with it.
After the last call it writes final.txt and prints its last manifest as
"MANIFEST 4".
"""
import hashlib, json, os, shutil, urllib.request

url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
skip = os.environ.get("FILES_AGENT_SKIP", "")


def manifest(n):
    out = {}
    for root, dirs, files in os.walk("."):
        dirs.sort()
        for name in dirs + files:
            p = os.path.join(root, name)[2:]
            if p == skip or p.startswith(".jukebox"):
                continue
            if os.path.islink(p):
                out[p] = "l " + os.readlink(p)
            elif os.path.isdir(p):
                out[p] = "d"
            else:
                with open(p, "rb") as f:
                    out[p] = "f " + hashlib.sha256(f.read()).hexdigest()
    print("MANIFEST", n, json.dumps(out, sort_keys=True), flush=True)


def call(n):
    manifest(n)
    body = json.dumps({"model": "demo-small", "max_tokens": 20,
                       "messages": [{"role": "user", "content": "step %d" % n}]}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        r.read()


def write(p, s):
    with open(p, "w") as f:
        f.write(s)


write("a.txt", "a at call 1\n")
os.makedirs("d", exist_ok=True)
write("d/x.txt", "x at call 1\n")
call(1)
write("a.txt", "a at call 2, longer\n")
os.rename("d/x.txt", "d/y.txt")
os.remove("keep.txt")
os.symlink("a.txt", "link")
os.chmod("mode.sh", 0o755)
call(2)
write("a.txt", "a at call 3\n")
shutil.rmtree("d")
write("gone.txt", "made and removed between calls\n")
os.remove("gone.txt")
write("sub/deep.txt", "x") if os.path.isdir("sub") else None
call(3)
write("final.txt", "after the last call\n")
manifest(4)
