#!/bin/bash
# The start memory gate's real outputs (gb10check/checks/memory.py), on the device tool's nvidia-h200-x2 machine from the
# repository root: nvidia-smi's compute processes and memory with no process and with a python3 holding 20 GiB on GPU 0
# (named VLLM::EngineCore through argv[0], as vLLM's setproctitle names its engine), the process table's line, and the
# memory probe (gb10check/canary/memory.py) on the machine's python3, each state in turn. Keep what comes back in
# selftests/captures/memory/ (see selftests/captures/README.md).
# The suite's own GPU_PROCESSES command is written here first (the device has no pydantic to import the suite):
#   python3 -c 'from gb10check.gather.commands import GPU_PROCESSES; print(GPU_PROCESSES)' > gpu_processes.sh
#   bash selftests/device/capture_memory_h200.sh 2>&1 | tee $OUT/run.log
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo; echo "=== $(date -u +%H:%M:%S) \$ $*"; }
APPS="nvidia-smi --query-compute-apps=pid,process_name,used_memory"
GPU="nvidia-smi --query-gpu=memory.total,memory.used,memory.free --format=csv"
look() {  # $1: the state's name
    for f in csv "csv,noheader,nounits"; do
        step "$APPS --format=$f"; $APPS --format=$f > "$OUT/h200-compute-apps-$1-${f//,/-}.txt" 2>&1; echo "exit $?"
        cat "$OUT/h200-compute-apps-$1-${f//,/-}.txt"
    done
    step "$GPU"; $GPU > "$OUT/h200-query-memory-$1.txt" 2>&1; cat "$OUT/h200-query-memory-$1.txt"
    step "nvidia-smi"; nvidia-smi > "$OUT/h200-nvidia-smi-$1.txt" 2>&1; cat "$OUT/h200-nvidia-smi-$1.txt"
    step "python3 - < gb10check/canary/memory.py"
    timeout 120 python3 - < gb10check/canary/memory.py > "$OUT/h200-memory-probe-$1.json"; echo "exit $?"
    cat "$OUT/h200-memory-probe-$1.json"
    step "the suite's own command (gb10check/gather/commands.py GPU_PROCESSES)"
    timeout 60 sh gpu_processes.sh \
        > "$OUT/h200-gpu-processes-$1.txt" 2>&1; echo "exit $?"; cat "$OUT/h200-gpu-processes-$1.txt"
}
date -u; uname -a
look idle
step "a python3 named VLLM::EngineCore holding 20 GiB on GPU 0"
cat > /tmp/holder.py <<'PY'
import time
import torch
x = torch.empty(20 << 30, dtype=torch.uint8, device="cuda:0")
torch.cuda.synchronize()
print("held", flush=True)
time.sleep(300)
PY
# argv[0] names the process; Python then cannot find its prefix from it, so its site-packages come by PYTHONPATH.
SITE=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
PY=$(command -v python3)
PYTHONPATH="$SITE" bash -c "exec -a VLLM::EngineCore $PY /tmp/holder.py" > "$OUT/holder.log" 2>&1 &
holder=$!
for i in $(seq 120); do grep -q held "$OUT/holder.log" && break; kill -0 $holder 2>/dev/null || break; sleep 0.5; done; cat "$OUT/holder.log"
step "ps -o pid,ppid,stat,comm,args -p $holder"; ps -o pid,ppid,stat,comm,args -p $holder | tee "$OUT/h200-ps-holder.txt"
look holding
kill $holder; wait $holder 2>/dev/null
for i in $(seq 40); do [ -z "$($APPS --format=csv,noheader)" ] && break; sleep 0.5; done
look after
# One archive: the device tool brings back a few files only.
(cd "$OUT" && tar czf memory-h200.tgz h200-* holder.log && rm -f h200-* holder.log)
