#!/usr/bin/env python3
"""A process that holds a known amount of GPU memory, for the hardware drill.

  nvidia_gpu_holder.py hold  --gib N --ready FILE
      Allocates N GiB with torch.empty(..., device='cuda') (a plain
      cudaMalloc through PyTorch's caching allocator, never managed memory),
      writes FILE (JSON: pid, what CUDA_VISIBLE_DEVICES and the instance
      marker were, torch's figures before and after) and sleeps until killed.
  nvidia_gpu_holder.py spawn --gib N --ready FILE
      Starts `hold` as a child with the same environment (a server whose
      worker holds the GPU, as vLLM's tensor-parallel workers do), writes
      FILE.parent with both pids, and waits for the child forever.

With DCU_DRILL_FAKE_GPU=1 (CPU dry runs of the drill) nothing is
allocated: the process appends "0:<pid>:<bytes>" to $FAKE_GPU_PROCS_FILE,
which the fake libnvidia-ml / libcuda the tests build read as the driver's
state (N GiB plus a 500 MiB "context"), and sleeps.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.rename(tmp, path)


def hold(gib, ready):
    info = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "gib": gib,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "marker": os.environ.get("DCUFLEET_INSTANCE"),
    }
    if os.environ.get("DCU_DRILL_FAKE_GPU") == "1":
        info["fake"] = True
        keep = None
        with open(os.environ["FAKE_GPU_PROCS_FILE"], "a") as f:
            f.write(f"0:{os.getpid()}:{(gib << 30) + (500 << 20)}\n")
    else:
        import torch

        torch.cuda.init()
        free0, total = torch.cuda.mem_get_info(0)
        keep = torch.empty(gib << 30, dtype=torch.uint8, device="cuda")
        keep.fill_(1)  # touch it: the pages are really backed
        torch.cuda.synchronize()
        free1, _ = torch.cuda.mem_get_info(0)
        info.update({
            "torch": torch.__version__,
            "torch_cuda": torch.version.cuda,
            "device_name": torch.cuda.get_device_name(0),
            "mem_get_info_total": total,
            "mem_get_info_free_before": free0,
            "mem_get_info_free_after": free1,
            "allocated_bytes": torch.cuda.memory_allocated(0),
            "reserved_bytes": torch.cuda.memory_reserved(0),
            "libcuda": sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcuda.so" in l}),
        })
    write_json(ready, info)
    sys.stdout.flush()
    while True:
        time.sleep(3600)
    del keep


def spawn(gib, ready):
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "hold", "--gib", str(gib), "--ready", ready])
    write_json(ready + ".parent", {"parent_pid": os.getpid(), "child_pid": child.pid,
                                   "marker": os.environ.get("DCUFLEET_INSTANCE")})
    child.wait()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["hold", "spawn"])
    p.add_argument("--gib", type=int, required=True)
    p.add_argument("--ready", required=True)
    a = p.parse_args()
    (hold if a.mode == "hold" else spawn)(a.gib, a.ready)


if __name__ == "__main__":
    main()
