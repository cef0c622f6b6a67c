#!/usr/bin/env python3
"""Splits failover latency into where it was spent.

Inputs, from one run of
  DCU_LOG_LEVEL=debug build/bin/dcu-loadgen --mode failover ... \
      --failover-trace TRACE --keep-log LOG
TRACE has one line per failed-over deployment: "<deployment> <FAILED report
queued at the agent, Unix ms> <next plan's Assignment at the agent, Unix ms>".
LOG is the controller's log at debug level, which has the moment each FAILED
report was applied ("node 'N' reported instance 'I' FAILED") and the moment the
pass that acted on it wrote its events ("deployment 'D' Failed: attempt ...").

Prints p50/p90/p99/max of each leg:
  agent -> controller   report queued by the simulated agent until applied
                        (the loadgen's send, the wire, gRPC's read queue)
  controller -> pass    applied until the pass that stepped it logged it
                        (waiting for the running pass, then the pass itself)
  pass -> agent         the rest: the pass's push (its events are logged
                        after the new attempt is persisted), the wire,
                        the loadgen's read
Usage: failover_breakdown.py TRACE LOG
"""
import datetime
import re
import sys

RECEIVED = re.compile(r"^(\S+)Z D \S+\] node '[^']*' reported instance '([^']+)' FAILED")
STEPPED = re.compile(r"^(\S+)Z I \S+\] deployment '([^']+)' Failed: attempt (\d+)")


def unix_ms(stamp):
    t = datetime.datetime.fromisoformat(stamp).replace(tzinfo=datetime.timezone.utc)
    return t.timestamp() * 1000.0


def deployment_of(instance_id):
    # Instance ids are "<deployment>-<attempt>-<suffix>".
    parts = instance_id.split("-")
    return "-".join(parts[:-2]) if len(parts) >= 3 else instance_id


def quantiles(xs):
    xs = sorted(xs)
    if not xs:
        return "no samples"
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]
    return "p50 %6.0f  p90 %6.0f  p99 %6.0f  max %6.0f ms" % (pick(0.5), pick(0.9), pick(0.99), xs[-1])


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    trace = {}
    with open(argv[1]) as f:
        for n, line in enumerate(f, 1):
            fields = line.split()
            if len(fields) != 3:
                sys.stderr.write("%s:%d: expected 3 fields, got %r\n" % (argv[1], n, line))
                return 1
            trace[fields[0]] = (int(fields[1]), int(fields[2]))
    received, stepped = {}, {}
    with open(argv[2], errors="replace") as f:
        for line in f:
            m = RECEIVED.match(line)
            if m:
                received.setdefault(deployment_of(m.group(2)), unix_ms(m.group(1)))
                continue
            m = STEPPED.match(line)
            if m and m.group(3) == "1":
                stepped.setdefault(m.group(2), unix_ms(m.group(1)))
    legs = {"agent -> controller": [], "controller -> pass": [], "pass -> agent": [], "total": []}
    for dep, (sent, assigned) in trace.items():
        if dep not in received or dep not in stepped:
            continue
        legs["agent -> controller"].append(received[dep] - sent)
        legs["controller -> pass"].append(stepped[dep] - received[dep])
        legs["pass -> agent"].append(assigned - stepped[dep])
        legs["total"].append(assigned - sent)
    joined = len(legs["total"])
    print("%d of %d failovers joined (the log must be at debug level)" % (joined, len(trace)))
    for name, xs in legs.items():
        print("%-20s %s" % (name, quantiles(xs)))
    return 0 if joined else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
