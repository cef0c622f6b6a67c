#!/usr/bin/env python3
"""The engine processes of a simulated fleet, read from /proc (issue 21).

Every process an agent starts carries DCUFLEET_INSTANCE=<instance id> in its
environment (agent/runtime/runtime.h), and an instance id is
<deployment>[-r<replica>]-<attempt>-<random> (controller/core/deploy_step.cc).
The server is the leader of its own session; its workers inherit the marker
but lead no session. Only processes whose command line names UNDER (the
bench's temp dir) count, so nothing else on the machine is touched.

  instances.py sample UNDER OUT STOPFILE   one line per 0.2 s until STOPFILE:
                                           "<unix time> id id ..." (servers)
  instances.py list UNDER                  "<pid> <sid leader?> <instance id>"
  instances.py kill UNDER                  SIGKILL every marked process
  instances.py engine UNDER DEPLOYMENT     pid of DEPLOYMENT's server, if one
  instances.py serving UNDER               the deployments with a server, sorted
"""
import os
import re
import signal
import sys
import time

MARKER = b"DCUFLEET_INSTANCE="


def marked(under):
    """(pid, is session leader, instance id) of every marked process under UNDER."""
    out = []
    needle = under.encode()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        pid = int(d)
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
            if needle not in cmd:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ids = [e[len(MARKER):].decode() for e in env if e.startswith(MARKER)]
        if not ids:
            continue
        # Fields after the command name, which may hold spaces: state ppid pgrp session.
        rest = stat[stat.rindex(b")") + 2:].split()
        if rest[0] in (b"Z", b"X"):
            continue  # exited, not yet reaped: not serving
        sid = int(rest[3])
        out.append((pid, sid == pid, ids[0]))
    return out


def deployment_of(instance_id):
    """(deployment, replica) of an instance id."""
    m = re.match(r"^(.*?)(?:-r(\d+))?-(\d+)-[0-9A-Za-z]+$", instance_id)
    if not m:
        return instance_id, 0
    return m.group(1), int(m.group(2) or 0)


def main():
    cmd, under = sys.argv[1], sys.argv[2]
    if cmd == "sample":
        out, stop = sys.argv[3], sys.argv[4]
        with open(out, "a") as f:
            while not os.path.exists(stop):
                ids = sorted(i for _, leader, i in marked(under) if leader)
                f.write(f"{time.time():.3f} {' '.join(ids)}\n")
                f.flush()
                time.sleep(0.2)
    elif cmd == "list":
        for pid, leader, iid in marked(under):
            print(pid, int(leader), iid)
    elif cmd == "kill":
        for pid, _, _ in marked(under):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    elif cmd == "serving":
        for name in sorted({deployment_of(i)[0] for _, leader, i in marked(under) if leader}):
            print(name)
    elif cmd == "engine":
        want = sys.argv[3]
        for pid, leader, iid in marked(under):
            if leader and deployment_of(iid)[0] == want:
                print(pid)
                return 0
        return 1
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
