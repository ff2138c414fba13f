#!/bin/bash
# Run on the device tool's nvidia-h200-x2 machine from the repository root: the suite's collectives canary
# (gb10check/canary/collectives.py) as two ranks, one process per GPU over loopback, as each node runs it: once as NCCL
# picks (P2P over NVLink), once kept off P2P and shared memory (NET/Socket: the socket fallback, there being no IB
# device there), once with NCCL_SOCKET_IFNAME naming an interface that does not exist (a run that fails).
#   bash selftests/device/run_collectives_h200.sh 2>&1 | tee $OUT/run.log
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
PY=$(command -v python3); [ -x /opt/torch/.venv/bin/python3 ] && PY=/opt/torch/.venv/bin/python3
step() { echo; echo "=== $(date -u +%H:%M:%S) \$ $*"; }
date -u; uname -a; nvidia-smi -L
run() {  # NAME TIMEOUT [VAR=value ...]: both ranks at once, each rank's stdout+stderr in $OUT/collectives-NAME-rankR.txt
  name=$1 t=$2; shift 2
  step "$* $PY - --rank R --world 2 --master 127.0.0.1 --port 29533 --device R < gb10check/canary/collectives.py (R = 0, 1)"
  s=$(date +%s%N)
  for r in 0 1; do
    env "$@" timeout "$t" "$PY" - --rank $r --world 2 --master 127.0.0.1 --port 29533 --device $r --timeout 60 \
      < gb10check/canary/collectives.py > "$OUT/collectives-$name-rank$r.txt" 2>&1 &
    eval "p$r=\$!"
  done
  wait $p0; echo "rank 0 exit $?"; wait $p1; echo "rank 1 exit $?"
  echo "wall $(( ($(date +%s%N) - s) / 1000000 )) ms"
  grep -h 'gb10check-collective\|via\|Using network' "$OUT/collectives-$name-rank0.txt" | head -60
}
run p2p 300
run socket 400 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1
run noif 90 NCCL_SOCKET_IFNAME=nosuch0
date -u
