#!/usr/bin/env python3
"""Run a command on a pseudo-terminal, as a person at a terminal would, and answer it.

  python3 pty-drive.py STEPS_JSON -- COMMAND ARGS...

STEPS_JSON: a list of {"wait": REGEX, "send": TEXT}: once the output so far matches REGEX (after
what the previous step matched), TEXT is typed (b"\\x03" is Ctrl-C: the terminal sends SIGINT to the
foreground process group). Everything the command wrote is copied to standard output; the exit
status is the command's (128 + signal when a signal ended it). A step whose text never comes fails
after 60 s with status 124, so a test cannot hang.
"""
import json
import os
import pty
import re
import select
import sys
import time

steps = json.loads(sys.argv[1])
cmd = sys.argv[sys.argv.index("--") + 1 :]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)

out = b""
pos = 0
deadline = time.time() + 60
status = None
while True:
    if steps:
        m = re.search(steps[0]["wait"].encode(), out[pos:])
        if m:
            pos += m.end()
            os.write(fd, steps.pop(0)["send"].encode())
            continue
    if time.time() > deadline:
        os.kill(pid, 9)
        sys.stdout.buffer.write(out)
        sys.stdout.write("\n[pty-drive: timed out waiting for %r]\n" % (steps[0]["wait"] if steps else "exit"))
        sys.exit(124)
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        out += chunk
sys.stdout.buffer.write(out)
_, st = os.waitpid(pid, 0)
sys.exit(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
