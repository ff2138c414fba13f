"""NCCL collectives across the ranks, for gb10check's test_nccl_collectives: all_reduce and all_gather, 8 KB to 256 MB.

Fed to the image's python3 on stdin (`python3 - --rank R --world N --master ADDR --port P`), one process per node, each
with its own node's NCCL environment; stdlib and torch only. NCCL_DEBUG=INFO (subsystems INIT,ENV,NET,GRAPH unless
set) makes NCCL print, on this process's stdout, the network it loaded, its devices and one line per channel with the
transport that carries it (`Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0`).

Prints one line per collective and size, `gb10check-collective {json}`: op, size (bytes, nccl-tests' meaning: the
whole buffer each rank ends with), iters, time_us (the mean of one call, the slowest rank's, by CUDA events), algbw and
busbw in GB/s with nccl-tests' formulas (algbw = size / time; busbw = algbw x 2(n-1)/n for all_reduce, (n-1)/n for
all_gather), wrong (elements that differ from what the collective must give). First a `gb10check-collective-start`
line (rank, world, host, device, torch, NCCL, the NCCL_* environment this process got), last a
`gb10check-collective-done` line; a failure prints `gb10check-collective-error {json}` and exits 1.
"""

import argparse
import json
import os
import socket
import sys
import time

MARK = "gb10check-collective"


def say(kind: str, **fields) -> None:
    print(f"{MARK}{kind} {json.dumps(fields, sort_keys=True)}", flush=True)


def sizes(low: int, high: int, factor: int) -> list[int]:
    out, size = [], low
    while size <= high:
        out.append(size)
        size *= factor
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--master", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--device", type=int, default=0, help="the CUDA device of this rank")
    ap.add_argument("--min-bytes", type=int, default=8 << 10)
    ap.add_argument("--max-bytes", type=int, default=256 << 20)
    ap.add_argument("--factor", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=120, help="seconds for the ranks to meet and for each collective")
    a = ap.parse_args()
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ.setdefault("NCCL_DEBUG_SUBSYS", "INIT,ENV,NET,GRAPH")
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")}
    try:
        import datetime

        import torch
        import torch.distributed as dist
    except Exception as exc:  # noqa: BLE001
        say("-error", rank=a.rank, error=f"cannot import torch: {type(exc).__name__}: {exc}")
        return 1
    if torch.version.cuda is None or not dist.is_available() or not dist.is_nccl_available():
        say("-error", rank=a.rank, error=f"torch {torch.__version__} has no CUDA NCCL backend (a CPU build)")
        return 1
    try:
        torch.cuda.set_device(a.device)
        device = torch.device("cuda", a.device)
        say("-start", rank=a.rank, world=a.world, host=socket.gethostname(), device=a.device,
            gpu=torch.cuda.get_device_name(a.device), torch=torch.__version__,
            nccl=".".join(map(str, torch.cuda.nccl.version())), env=env)
        dist.init_process_group("nccl", init_method=f"tcp://{a.master}:{a.port}", rank=a.rank, world_size=a.world,
                                timeout=datetime.timedelta(seconds=a.timeout), device_id=device)
        n = a.world
        for op in ("all_reduce", "all_gather"):
            for size in sizes(a.min_bytes, a.max_bytes, a.factor):
                count = size // 4  # float32 elements of the whole buffer
                if op == "all_reduce":
                    buf = torch.full((count,), float(a.rank + 1), device=device)
                    want = float(n * (n + 1) // 2)

                    def call():
                        dist.all_reduce(buf)
                else:
                    per = count // n
                    send = torch.full((per,), float(a.rank + 1), device=device)
                    buf = torch.empty((per * n,), device=device)

                    def call():
                        dist.all_gather_into_tensor(buf, send)
                iters = max(5, min(100, (1 << 30) // size))
                for _ in range(3):  # warm-up: the first call of a size sets up its connections
                    call()
                torch.cuda.synchronize(device)
                if op == "all_reduce":
                    buf.fill_(float(a.rank + 1))
                    call()
                    wrong = int((buf != want).sum())
                else:
                    call()
                    expect = torch.arange(1, n + 1, device=device, dtype=torch.float32).repeat_interleave(per)
                    wrong = int((buf != expect).sum())
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize(device)
                start.record()
                for _ in range(iters):
                    call()
                end.record()
                end.synchronize()
                mine = start.elapsed_time(end) * 1000 / iters  # us per call
                slowest = torch.tensor([mine, float(wrong)], device=device, dtype=torch.float64)
                dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                t_us, wrong_max = float(slowest[0]), int(slowest[1])
                used = (per * n if op == "all_gather" else count) * 4
                algbw = used / (t_us * 1e-6) / 1e9
                busbw = algbw * (2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n)
                say("", rank=a.rank, op=op, size=used, iters=iters, time_us=round(t_us, 2), algbw=round(algbw, 3),
                    busbw=round(busbw, 3), wrong=wrong_max)
                del buf
        dist.barrier()
        dist.destroy_process_group()
        say("-done", rank=a.rank)
        return 0
    except Exception as exc:  # noqa: BLE001
        say("-error", rank=a.rank, error=f"{type(exc).__name__}: {str(exc)[:600]}")
        sys.stdout.flush()
        time.sleep(0.1)
        return 1


if __name__ == "__main__":
    sys.exit(main())
