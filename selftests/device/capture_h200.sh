#!/bin/bash
# Produces our own captures on a lent NVIDIA machine (the device tool's nvidia-h200-x2), not in CI.
# Run from the repo root, with nccl-tests' source exported into .device/nccl-tests (carried):
#   export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
#   set -o pipefail; bash selftests/device/capture_h200.sh 2>&1 | tee $OUT/run.log
# Writes the captures under $CAP (default /tmp/cap) and tars them into $OUT/captures.tgz.
# The 2026-11-30 run (selftests/captures/README.md) timed the matmul and read the NCCL identity with a program of its own,
# selftests/device/gpu_canary.py (removed since; `git show d52dddc:selftests/device/gpu_canary.py`); step 3 now runs the
# suite's packaged programs, gb10check/canary/matmul.py and nccl.py, as test_gpu_compute and test_image_nccl do.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
REPO=$(pwd)
CAP=${CAP:-/tmp/cap}
OUT=${OUT:-/tmp/out}
mkdir -p "$CAP"/{nvidia_smi,nccl_tests,meminfo,gpu_canary,raw} "$OUT"
S=$CAP/nvidia_smi; N=$CAP/nccl_tests; M=$CAP/meminfo; G=$CAP/gpu_canary; R=$CAP/raw
step() { echo "=== $(date -u +%FT%TZ) $*"; }
# cap FILE CMD...: stdout+stderr of CMD into FILE, the exit status into the log
cap() { local f=$1; shift; step "$* > ${f#$CAP/}"; "$@" >"$f" 2>&1; echo "rc=$?"; }

step "1. machine, idle"
Q=name,driver_version,pci.bus_id,memory.total,memory.used,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active,pstate
cap $S/h200-nvidia-smi.txt nvidia-smi
cap $R/h200-nvidia-smi-L.txt nvidia-smi -L
step "nvidia-smi -q | head -200 > raw/h200-nvidia-smi-q-head200.txt"
nvidia-smi -q 2>&1 | head -200 >$R/h200-nvidia-smi-q-head200.txt
cap $S/h200-query-gpu-csv.txt nvidia-smi --query-gpu=$Q --format=csv
cap $S/h200-query-gpu-csv-noheader.txt nvidia-smi --query-gpu=$Q --format=csv,noheader
cap $S/h200-query-gpu-csv-noheader-nounits.txt nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits
if grep -qi 'not a valid field\|invalid' $S/h200-query-gpu-csv.txt; then
  Q2=${Q/clocks_throttle_reasons/clocks_event_reasons}
  cap $S/h200-query-gpu-csv-event-reasons.txt nvidia-smi --query-gpu=$Q2 --format=csv
fi
cap $S/h200-proc-driver-nvidia-version.txt cat /proc/driver/nvidia/version
cap $M/h200-proc-meminfo.txt cat /proc/meminfo
cap $M/h200-free-h.txt free -h
cap $M/h200-free-m.txt free -m
cap $R/h200-uname-a.txt uname -a
cap $R/h200-nvidia-smi-topo-m.txt nvidia-smi topo -m
step "environment"
{ nproc; command -v nvcc python3 readelf; nvcc --version; python3 -c "import torch,os; print(torch.__file__, torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.device_count())"; } >$R/h200-env.txt 2>&1
cat $R/h200-env.txt

step "2a. build nccl-tests (background) against torch's NCCL"
SITE=$(python3 -c "import torch,os; print(os.path.dirname(os.path.dirname(torch.__file__)))")
NCCL_LIB=$(dirname "$(find "$SITE/nvidia" -name 'libnccl.so*' | head -1)")
NCCL_H=$(find "$SITE/nvidia" -name nccl.h | head -1)
[ -n "$NCCL_H" ] || NCCL_H=$(find /usr /opt -name nccl.h 2>/dev/null | head -1)
NCCL_INC=$(dirname "$NCCL_H")
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)
CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
echo "SITE=$SITE NCCL_LIB=$NCCL_LIB NCCL_INC=$NCCL_INC CUDA_HOME=$CUDA_HOME"
ls -l "$NCCL_LIB" "$NCCL_INC"
# pip's NCCL has no libnccl.so link to link against: a home with include/ and lib/ beside it
NH=/tmp/ncclhome; mkdir -p $NH/lib; ln -sfn "$NCCL_INC" $NH/include
ln -sf "$NCCL_LIB"/libnccl.so.2 $NH/lib/libnccl.so; ln -sf "$NCCL_LIB"/libnccl.so.2 $NH/lib/libnccl.so.2
B=/tmp/nccl-tests-build
( cd .device/nccl-tests/src && timeout 420 make -j16 MPI=0 NCCL_HOME=$NH CUDA_HOME="$CUDA_HOME" \
    NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 BUILDDIR=$B os.build $B/all_reduce_perf $B/all_gather_perf ) \
  >$R/h200-nccl-tests-build.txt 2>&1 &
BUILD=$!

step "3. canary: bf16 matmul on cuda:0 while nvidia-smi samples every 500 ms"
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 500 \
  >$G/h200-smi-samples-500ms.txt 2>&1 &
SMI=$!
sleep 1.5
step "python3 - --seconds 10 < gb10check/canary/matmul.py > gpu_canary/h200-matmul.json"
PYTHONUNBUFFERED=1 python3 - --seconds 10 < "$REPO"/gb10check/canary/matmul.py >$G/h200-matmul.json; echo "rc=$?"
sleep 1.5; kill $SMI; wait $SMI 2>/dev/null
cat $G/h200-matmul.json
step "python3 - < gb10check/canary/nccl.py > gpu_canary/h200-nccl.json"
python3 - < "$REPO"/gb10check/canary/nccl.py >$G/h200-nccl.json; echo "rc=$?"
cat $G/h200-nccl.json
step "readelf -n <that libnccl> | grep 'Build ID' (the same id, read by binutils)"
readelf -n "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["path"])' $G/h200-nccl.json)" | grep 'Build ID'

step "wait for the build"
wait $BUILD; echo "build rc=$?"; tail -5 $R/h200-nccl-tests-build.txt; ls -l $B
export LD_LIBRARY_PATH=$NCCL_LIB:${LD_LIBRARY_PATH:-}
step "ldd all_reduce_perf | grep nccl"; ldd $B/all_reduce_perf | grep -i nccl

step "2b. nccl-tests, NCCL_DEBUG=INFO"
ncl() { local f=$1; shift; step "$* > ${f#$CAP/}"; timeout 150 env NCCL_DEBUG=INFO "$@" >"$f" 2>&1; echo "rc=$?"; tail -4 "$f"; }
ncl $N/h200x2-all_reduce_perf-8-256M-f4-g2-p2p.txt $B/all_reduce_perf -b 8 -e 256M -f 4 -g 2
ncl $N/h200x2-all_reduce_perf-8-256M-f4-g2-socket.txt env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 $B/all_reduce_perf -b 8 -e 256M -f 4 -g 2
if ! grep -q 'Avg bus bandwidth' $N/h200x2-all_reduce_perf-8-256M-f4-g2-socket.txt; then
  ncl $N/h200x2-all_reduce_perf-8-256M-f4-g2-socket-lo.txt env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo $B/all_reduce_perf -b 8 -e 256M -f 4 -g 2
fi
ncl $N/h200x2-all_gather_perf-1G-g2.txt $B/all_gather_perf -b 1G -e 1G -g 2

step "done"; find $CAP -type f -exec ls -l {} +
tar -C "$CAP" -czf "$OUT"/captures.tgz .
