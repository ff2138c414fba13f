#!/bin/bash
# Run on the device tool's nvidia-h200 machine from the repository root, with the wheels of the suite's Python
# dependencies in .whl/ (carried): the canary programs (matmul, nccl, kernels) straight on the machine's python3, Triton's
# answer for architectures other than the GPU's (selftests/device/triton_arch_probe.py) and ptxas's own for each ptxas
# there, then the preflight checks that apply to one GPU machine through a local-connection cluster file.
#   bash selftests/device/run_canaries_h200.sh 2>&1 | tee $OUT/run.log
# Nothing is installed from a network (there is none there): a Triton that is missing is recorded as the canary says it.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
step() { echo; echo "=== $(date -u +%H:%M:%S) \$ $*"; }
date -u; uname -a
step python3 -m pip install --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
step env; python3 -c 'import sys, torch, pytest, pydantic, paramiko, testinfra; print(sys.executable, sys.version.split()[0], "torch", torch.__version__, torch.version.cuda, torch.cuda.device_count(), "pytest", pytest.__version__, "pydantic", pydantic.VERSION)'
env | grep -E '^(NCCL|TORCH_SYMM|NVSHMEM)_' | sort
step nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
cat /proc/driver/nvidia/version
SMI="nvidia-smi -i 0 --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader,nounits -lms 500"
step "$SMI > \$OUT/h200-smi-samples-matmul.txt (background) while python3 - --seconds 10 < gb10check/canary/matmul.py"
{ echo "\$ $SMI"; } > "$OUT/h200-smi-samples-matmul.txt"
$SMI >> "$OUT/h200-smi-samples-matmul.txt" 2>&1 & s=$!
python3 - --seconds 10 < gb10check/canary/matmul.py > "$OUT/h200-matmul.json"; echo "exit $?"
kill $s; wait $s 2>/dev/null
cat "$OUT/h200-matmul.json"
step "python3 - < gb10check/canary/nccl.py"
python3 - < gb10check/canary/nccl.py > "$OUT/h200-nccl.json"; echo "exit $?"
cat "$OUT/h200-nccl.json"
step "readelf -n <the libnccl path above> | grep 'Build ID'"
readelf -n "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["path"])' "$OUT/h200-nccl.json")" | grep 'Build ID'
step "python3 -c 'import triton; print(triton.__version__)'"
python3 -c 'import triton; print(triton.__version__)' > "$OUT/h200-triton-version.txt" 2>&1; echo "exit $?"
cat "$OUT/h200-triton-version.txt"
python3 -c 'import triton, os; print(triton.__file__)' 2>&1
TBIN=$(python3 -c 'import triton, os; print(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin"))' 2>/dev/null)
ls -l "$TBIN" 2>&1; command -v gcc cc ptxas 2>&1; ldconfig -p 2>/dev/null | grep -i libcuda; ls /usr/local | grep -i cuda
step "python3 - < gb10check/canary/kernels.py"
python3 - < gb10check/canary/kernels.py > "$OUT/h200-kernels.json" 2> "$OUT/h200-kernels-stderr.txt"; echo "exit $?"
cat "$OUT/h200-kernels.json"; tail -20 "$OUT/h200-kernels-stderr.txt"
if grep -q 'libcuda' "$OUT/h200-kernels.json"; then
  LIBCUDA=$(python3 -c 'import torch; torch.zeros(1, device="cuda"); print(sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcuda.so" in l})[0])')
  step "TRITON_LIBCUDA_PATH=$(dirname "$LIBCUDA") python3 - < gb10check/canary/kernels.py"
  TRITON_LIBCUDA_PATH=$(dirname "$LIBCUDA") python3 - < gb10check/canary/kernels.py > "$OUT/h200-kernels-libcuda-path.json" 2>&1; echo "exit $?"
  cat "$OUT/h200-kernels-libcuda-path.json"
fi
for cap in 121 199; do
  step "python3 selftests/device/triton_arch_probe.py $cap"
  timeout 180 python3 selftests/device/triton_arch_probe.py $cap > "$OUT/h200-triton-arch-$cap.json" 2> "$OUT/h200-triton-arch-$cap-stderr.txt"
  echo "exit $?"; cat "$OUT/h200-triton-arch-$cap.json"; tail -5 "$OUT/h200-triton-arch-$cap-stderr.txt"
done
# ptxas's own answer for each ptxas here: a PTX for any sm_90 or later (no 'a' features), three --gpu-name values
printf '.version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n' > /tmp/k.ptx
step "ptxas --version; ptxas --gpu-name=sm_90a|sm_121a|sm_199a /tmp/k.ptx > \$OUT/h200-ptxas-archs.txt"
for p in "$TBIN"/ptxas* "$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)"; do
  [ -x "$p" ] || continue
  echo "\$ $p --version"; "$p" --version 2>&1; echo "exit $?"
  for a in sm_90a sm_121a sm_199a; do
    echo "\$ $p --gpu-name=$a /tmp/k.ptx -o /tmp/k.o"; "$p" --gpu-name=$a /tmp/k.ptx -o /tmp/k.o 2>&1; echo "exit $?"
  done
  echo "\$ $p --help | grep -A12 -- '--gpu-name'"; "$p" --help 2>&1 | grep -A12 -- '--gpu-name' | head -40
done > "$OUT/h200-ptxas-archs.txt" 2>&1
cat "$OUT/h200-ptxas-archs.txt"
step python3 -m pytest -p gb10check.plugin -m preflight tests/preflight/test_identity.py tests/preflight/test_driver.py tests/preflight/test_gpu.py --cluster=selftests/device/h200-local-cluster.yaml
python3 -m pytest -p gb10check.plugin -p no:cacheprovider -m preflight -rA --junitxml="$OUT/h200-preflight-junit.xml" \
  tests/preflight/test_identity.py tests/preflight/test_driver.py tests/preflight/test_gpu.py \
  --cluster=selftests/device/h200-local-cluster.yaml > "$OUT/h200-preflight-rA.txt" 2>&1
echo "exit $?"
cat "$OUT/h200-preflight-rA.txt"
# The device tool sends back at most 8 files of a call (run 2 lost run.log and the probe's files that way): everything
# but the log, which tee still writes, goes back as one archive. (Added after run 2; see selftests/captures/README.md.)
( cd "$OUT" && files=$(ls | grep -v -x -e run.log -e h200-outputs.tgz) && tar -czf h200-outputs.tgz $files && rm -f $files )
ls -l "$OUT"
