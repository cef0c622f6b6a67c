#!/usr/bin/env python3
"""Checks for the NVIDIA hardware drill (nvidia_h200.sh) and the capture.

Reads what the drill wrote (OUT: inventory_*.json, reap_report.json; WORK:
raw views per phase, the holders' own reports) and writes OUT/capture.json:
facts about the machine, the raw views, the figures the docs quote, and
every check with its verdict. Exit 0 when all checks passed.

Tolerance: a process that allocates N GiB through PyTorch also carries its
CUDA context (a few hundred MiB on Hopper), so "moved by N GiB" means
N GiB - 64 MiB <= delta <= N GiB + 1.5 GiB.
"""
import argparse
import glob
import json
import os
import platform
import time

GIB = 1 << 30
MIB = 1 << 20


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return default


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except Exception:
        return None


def i(x):
    return None if x is None else int(x)


def dev0(inv):
    if not inv or not inv.get("devices"):
        return {}
    return inv["devices"][0]


def reading(d, name):
    r = d.get(name) or {}
    # proto3 JSON leaves out zero values: a valid reading without "bytes" is 0.
    return i(r.get("bytes", 0)) if r.get("valid") else None


def holder(d, pid):
    for h in d.get("holders", []):
        if int(h.get("pid", 0)) == int(pid):
            return h
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--gib", type=int, default=20)
    ap.add_argument("--nvml", default="")
    ap.add_argument("--cuda", default="")
    ap.add_argument("--drill_ok", default="1")
    a = ap.parse_args()
    out, work, n = a.out, a.work, a.gib
    lo, hi = n * GIB - 64 * MIB, n * GIB + 1536 * MIB

    checks = []

    def check(name, ok, detail):
        checks.append({"name": name, "ok": bool(ok), "detail": detail})
        print(("PASS " if ok else "FAIL ") + name + ": " + detail)

    inv = {p: load(os.path.join(out, f"inventory_{p}.json")) for p in
           ["idle", "alloc", "stopped", "leftover", "recovered"]}
    inv["managed"] = load(os.path.join(work, "inventory_managed.json"))
    reap = load(os.path.join(out, "reap_report.json"))
    u = load(os.path.join(work, "u.ready"), {})
    m = load(os.path.join(work, "m.ready"), {})
    mp = load(os.path.join(work, "m.ready.parent"), {})
    launch = load(os.path.join(work, "launch.json"), {})
    inspect = load(os.path.join(work, "inspect.json"), {})

    raw = {}
    for path in sorted(glob.glob(os.path.join(work, "raw_*"))):
        base = os.path.basename(path)[4:]
        phase, _, kind = base.partition(".")
        entry = raw.setdefault(phase, {})
        if kind == "pynvml":
            entry[kind] = load(path)
        elif kind == "memprobe":
            entry[kind] = [json.loads(l) for l in (read(path) or "").splitlines() if l.strip().startswith("{")]
        else:
            entry[kind] = read(path)

    figures = {}
    d = {p: dev0(v) for p, v in inv.items()}

    # -- idle
    di = d["idle"]
    if di:
        figures["idle"] = {k: reading(di, k) for k in
                           ["total", "host_used", "host_free", "host_reserved", "device_total", "device_free",
                            "device_self_used", "schedulable_free"]}
        figures["idle"]["unreclaimed"] = i(di.get("unreclaimed_bytes", 0))
        check("idle: one NVIDIA device, sm_90, both views",
              len(inv["idle"]["devices"]) == 1 and di.get("vendor") == "nvidia" and di.get("arch") == "sm_90"
              and reading(di, "host_free") is not None and reading(di, "device_free") is not None,
              f"{di.get('product_name')} {di.get('arch')} ({di.get('arch_source')}) {di.get('pci_bus')} "
              f"probes {inv['idle'].get('probe_log')}")
        check("idle: nothing unreclaimed", i(di.get("unreclaimed_bytes", 0)) == 0 and
              (di.get("unreclaimed") or {}).get("valid"), (di.get("unreclaimed") or {}).get("source", ""))
    else:
        check("idle: inventory", False, "no idle inventory")

    # -- alloc
    da = d["alloc"]
    upid = u.get("pid")
    if da and di and upid:
        hu = (reading(da, "host_used") or 0) - (reading(di, "host_used") or 0)
        df = (reading(di, "device_free") or 0) - (reading(da, "device_free") or 0)
        h = holder(da, upid)
        hv = i(h.get("vram_bytes", 0)) if h else None
        figures["alloc"] = {"host_used_delta": hu, "device_free_delta": df, "holder_vram": hv,
                            "torch_free_delta": (u.get("mem_get_info_free_before") or 0) -
                            (u.get("mem_get_info_free_after") or 0),
                            "torch_reserved": u.get("reserved_bytes"), "unreclaimed": i(da.get("unreclaimed_bytes", 0))}
        check(f"alloc: host view (NVML used) moved by {n} GiB", lo <= hu <= hi, f"{hu} bytes = {hu / GIB:.3f} GiB")
        check(f"alloc: device view (cuMemGetInfo free) moved by {n} GiB", lo <= df <= hi,
              f"{df} bytes = {df / GIB:.3f} GiB")
        check("alloc: the holder is listed with its memory",
              h is not None and hv is not None and lo <= hv <= hi and h.get("holder_class") == "HOLDER_UNMANAGED",
              f"pid {upid}: {None if not h else (h.get('holder_class'), h.get('state'), hv, h.get('vram_source'), h.get('device_paths'))}")
        check("alloc: nothing unreclaimed", i(da.get("unreclaimed_bytes", 0)) == 0,
              (da.get("unreclaimed") or {}).get("source", ""))
    else:
        check("alloc: inventory and holder", False, f"inventory {bool(da)} holder pid {upid}")

    # -- stopped
    ds = d["stopped"]
    h = holder(ds, upid) if ds and upid else None
    check("stopped: SIGSTOPped holder shown as unmanaged, state T",
          h is not None and h.get("state") == "T" and h.get("holder_class") == "HOLDER_UNMANAGED",
          f"{None if not h else (h.get('state'), h.get('holder_class'), h.get('class_reason'), h.get('vram_bytes'))}")

    # -- managed / leftover / reap
    if a.drill_ok == "1":
        child, server = mp.get("child_pid"), mp.get("parent_pid")
        check("managed: the server is the runtime's process and its child got CUDA_VISIBLE_DEVICES=0 and the marker",
              launch.get("pid") == server and m.get("cuda_visible_devices") == "0" and m.get("marker") == "inst-h200",
              f"runtime pid {launch.get('pid')} server {server} child {child} CUDA_VISIBLE_DEVICES "
              f"{m.get('cuda_visible_devices')!r} marker {m.get('marker')!r}")
        dm = d["managed"]
        h = holder(dm, child) if dm and child else None
        check("managed: the child is a managed holder while the instance runs",
              h is not None and h.get("holder_class") == "HOLDER_MANAGED",
              f"{None if not h else (h.get('holder_class'), h.get('instance_id'), h.get('vram_bytes'))}")
        dl = d["leftover"]
        h = holder(dl, child) if dl and child else None
        check("leftover: after the server was killed the child is a leftover, parent gone",
              h is not None and h.get("holder_class") == "HOLDER_LEFTOVER" and not h.get("parent_alive", False)
              and inspect.get("running") is False,
              f"{None if not h else (h.get('holder_class'), h.get('class_reason'), h.get('ppid'), h.get('vram_bytes'))}"
              f"; runtime says running={inspect.get('running')} exit_known={inspect.get('exit_known')} "
              f"signal={inspect.get('term_signal')}")
        check("leftover: the killed server holds nothing", dl and holder(dl, server) is None, f"server {server}")
        acts = (reap or {}).get("actions", [])
        mine = [x for x in acts if int(x.get("pid", 0)) == int(child or -1)]
        ended = any(x.get("action") in ("sigterm", "sigkill") and x.get("result") == "ended" for x in mine)
        check("reap: the leftover was signalled and ended", ended,
              json.dumps([(x.get("action"), x.get("result"), x.get("reason")) for x in acts]))
        mem = ((reap or {}).get("memory") or [{}])[0]
        before = reading(mem, "device_free_before")
        after = reading(mem, "device_free_after")
        rec = (after or 0) - (before or 0)
        figures["reap"] = {"device_free_before": before, "device_free_after": after, "recovered": rec,
                           "unreclaimed_before": i(mem.get("unreclaimed_before")),
                           "unreclaimed_after": i(mem.get("unreclaimed_after")),
                           "grace_ms": i((reap or {}).get("grace_ms")),
                           "reap_ms": (i((reap or {}).get("finished_at_ms")) or 0) -
                           (i((reap or {}).get("started_at_ms")) or 0)}
        check(f"reap: the device view recovered {n} GiB", lo <= rec <= hi, f"{rec} bytes = {rec / GIB:.3f} GiB")
        hb, ha = reading(mem, "host_used_before"), reading(mem, "host_used_after")
        hrec = (hb or 0) - (ha or 0)
        figures["reap"].update({"host_used_before": hb, "host_used_after": ha, "host_recovered": hrec,
                                "findings": [(f.get("code"), f.get("message")) for f in (reap or {}).get("findings", [])]})
        check(f"reap: the host view (NVML) recovered {n} GiB too", lo <= hrec <= hi,
              f"{hrec} bytes = {hrec / GIB:.3f} GiB; findings {figures['reap']['findings']}")
    dr = d["recovered"]
    if dr and di:
        gap = abs((reading(dr, "device_free") or 0) - (reading(di, "device_free") or 0))
        figures["recovered"] = {"device_free_vs_idle": gap, "holders": len(dr.get("holders", [])),
                                "unreclaimed": i(dr.get("unreclaimed_bytes", 0))}
        check("recovered: device view back to idle, no holders, nothing unreclaimed",
              gap <= 256 * MIB and not dr.get("holders") and i(dr.get("unreclaimed_bytes", 0)) == 0,
              f"free differs from idle by {gap} bytes; holders {len(dr.get('holders', []))}")

    capture = {
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {"uname": " ".join(platform.uname()), "os_release": read("/etc/os-release"),
                    "nvml_library": a.nvml, "cuda_library": a.cuda},
        "gib": n,
        "tolerance": {"low_bytes": lo, "high_bytes": hi},
        "holders": {"unmanaged": u, "managed_child": m, "managed_parent": mp},
        "launch": launch,
        "inspect_after_kill": inspect,
        "inventory_managed": inv["managed"],
        "raw": raw,
        "stderr": {os.path.basename(p): read(p)[-2000:] for p in glob.glob(os.path.join(work, "*.err"))
                   if read(p)},
        "inventory_ms": {os.path.basename(p)[7:]: i(read(p).strip()) for p in
                         glob.glob(os.path.join(work, "timing_*")) if read(p)},
        "release_lag": load(os.path.join(work, "release_lag.json")),
        "figures": figures,
        "checks": checks,
        "passed": all(c["ok"] for c in checks),
    }
    with open(os.path.join(out, "capture.json"), "w") as f:
        json.dump(capture, f, indent=1)
    print(f"{sum(c['ok'] for c in checks)}/{len(checks)} checks passed")
    print("figures: " + json.dumps(figures))
    return 0 if capture["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
