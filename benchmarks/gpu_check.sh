#!/usr/bin/env bash
# The GPU checks of decode="cuda" in one command, for the GPU machine:
#   source .device/setup.sh && bash benchmarks/gpu_check.sh
# (carry=[".device"]; see ../shared/device/README.md). Writes under $OUT (or ./gpu_check_out):
#   pytest_cuda.log / .xml  every cuda-marked test (decode="cuda", the prefetcher's, DALI's where installed)
#   gpu_decode.json         decode + RandomResizedCrop + flip + normalise alone, batch 256 (target >= 10,000 img/s)
#   gpu_train.json          ResNet-50 bf16 channels_last fed by each loader, % of synthetic (target >= 90 % with 4 workers)
#   summary.txt             the tables, the GPU and the versions
# Each step runs even when an earlier one fails; the exit status is the first failure's.
set -u
out=${OUT:-gpu_check_out}; mkdir -p "$out"
photos=${FASTDATA_PHOTOS:-../shared/data/photos/hymenoptera}
status=0
run() { "$@" || { rc=$?; echo "gpu_check: '$*' exited $rc" | tee -a "$out/summary.txt"; [ "$status" = 0 ] && status=$rc; }; }
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null; date -u; } > "$out/summary.txt"
# from /tmp: "python3 -m pytest" in the checkout would put its source tree (no compiled decoder, no
# fastdata.converters) ahead of the installed project that setup.sh built
root=$PWD; case "$out" in /*) ;; *) out=$root/$out ;; esac
run bash -c "cd /tmp && python3 -m pytest -q -p no:cacheprovider -m cuda -rs --rootdir '$root' \
    --junitxml='$out/pytest_cuda.xml' '$root/tests/gpu' '$root/tests/loading' '$root/tests/dali' > '$out/pytest_cuda.log' 2>&1"
tail -n 30 "$out/pytest_cuda.log" >> "$out/summary.txt"
# decode-only: each loader alone; then training, 4 CPU workers (threads or processes) per loader
run python3 benchmarks/gpu_train.py "$photos/train" --decode-only --batch 256 --steps 40 --workers 4 \
    --feeds fastdata-cuda-threads,fastdata-cuda-processes,fastdata-cpu,torchvision --json "$out/gpu_decode.json" \
    >> "$out/summary.txt" 2>&1
run python3 benchmarks/gpu_train.py "$photos/train" --batch 256 --steps 40 --workers 4 --json "$out/gpu_train.json" \
    >> "$out/summary.txt" 2>&1
cat "$out/summary.txt"
exit "$status"
