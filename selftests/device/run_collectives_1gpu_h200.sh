#!/bin/bash
# Run on the device tool's one-GPU nvidia-h200 machine from the repository root: the suite's collectives canary
# (gb10check/canary/collectives.py) for real on one GPU. NCCL refuses two ranks on one device, so: one rank alone
# (world 1, every collective and size); two ranks both on device 0 (NCCL's own refusal, a run that fails); one rank
# with NCCL_SOCKET_IFNAME naming an interface that does not exist (a bootstrap that fails).
#   bash selftests/device/run_collectives_1gpu_h200.sh 2>&1 | tee $OUT/run.log
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
PY=$(command -v python3); [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
step() { echo; echo "=== $(date -u +%H:%M:%S) \$ $*"; }
date -u; uname -a; nvidia-smi -L
run() {  # NAME WORLD TIMEOUT [VAR=value ...]: WORLD ranks at once on device 0, each rank's output in $OUT/collectives-1gpu-NAME-rankR.txt
  name=$1 world=$2 t=$3; shift 3
  step "$* $PY - --rank R --world $world --master 127.0.0.1 --port 29533 --device 0 --timeout 60 < gb10check/canary/collectives.py"
  s=$(date +%s%N) pids=()
  for r in $(seq 0 $((world - 1))); do
    env "$@" timeout "$t" "$PY" - --rank $r --world "$world" --master 127.0.0.1 --port 29533 --device 0 --timeout 60 \
      < gb10check/canary/collectives.py > "$OUT/collectives-1gpu-$name-rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do wait "${pids[$r]}"; echo "rank $r exit $?"; done
  echo "wall $(( ($(date +%s%N) - s) / 1000000 )) ms"
  grep -h 'gb10check-collective\|via\|Using network\|WARN\|rror' "$OUT/collectives-1gpu-$name-rank0.txt" | head -60
}
run alone 1 300
run shared 2 120
run noif 1 90 NCCL_SOCKET_IFNAME=nosuch0
date -u
# One archive: the device tool brings back a few files only.
(cd "$OUT" && tar czf collectives-1gpu-h200.tgz collectives-1gpu-*.txt && rm -f collectives-1gpu-*.txt)
