#!/usr/bin/env bash
# The GPU checks of decode="cuda" in one command, for the GPU machine:
#   source .device/setup.sh && bash benchmarks/gpu_check.sh
# (carry=[".device"]; see ../shared/device/README.md). Writes under $OUT (or ./gpu_check_out) five files:
#   gpu_check.json   everything: device, date, versions, tests, decode_only, train, memory, parts, targets
#                    (+ "raw": the parts' own JSON), made by benchmarks/gpu_check_summary.py
#   summary.txt      the same as tables (also printed at the end)
#   pytest_cuda.log  (a) every cuda-marked test, then the stream test without its guard (appended)
#   pytest_cuda.xml  (a)'s junit XML
#   bench.log        the output of (b), (c), (d) and (e): tables, tracebacks of feeds that failed
#   profile.txt      (e) torch.profiler's tables over 20 decode="cuda" steps, decode-only and training
# Parts, each under `timeout`, each run even when an earlier one failed or timed out:
#   (a) tests        every cuda-marked test                                                  time box 150 s
#       stream_test  tests/gpu/test_gpu_cuda.py -k "$GPU_CHECK_STREAM_K" (default "stream or overwrite":
#                    the stream-hazard test) with FASTDATA_TEST_UNGUARDED=1: recorded whether
#                    it fails (it should: the test can catch the hazard)                    time box  60 s
#   (b) decode_only  decode + RandomResizedCrop + flip + normalise, batch 256, no model:
#                    decode="cuda" over torchvision and nvimgcodec, 2 and 4 worker processes;
#                    the hybrid (GPUDecode(cpu_share="auto"): feed fastdata-hybrid) with 4 and 8
#                    processes, and with torchvision; fastdata-cpu with 4 workers for reference
#                    (targets >= 10,000 img/s; the hybrid >= 20,000)                         time box 100 s
#   (c) train        ResNet-50 bf16 channels_last img/s and % of synthetic: synthetic, torchvision
#                    (15 workers), decode="cpu" (4, 8, 15), decode="cuda" (2, 4 processes), the
#                    hybrid (2, 4 processes) (targets: cuda >= 90 %, hybrid >= 97 % of synthetic
#                    with <= 4 workers)                                                       time box 180 s
#       core_budget  the same training, the whole process and its workers pinned to 8 cores, then
#                    to 4 (gpu_train.py --cores N: os.sched_setaffinity before anything starts):
#                    synthetic, decode="cpu" (N-1 threads), decode="cuda" (min(4, N-1) processes),
#                    the hybrid (N-1 processes; its share settles in the warm-up and is recorded)
#                    (target: the hybrid >= 95 % of synthetic with 8 cores)                  time box 130 s
#   (d) memory       decode="cuda", 4 processes, 5 epochs of 16 batches of 256: reserved and
#                    process GPU memory after each epoch (target: flat within 1 % after 2)    time box  60 s
#   (e) profile      torch.profiler over 20 steps: decode="cuda" (4 processes), loader alone, and the
#                    hybrid (4 processes) training, and the stage thread's host ms per step  time box  90 s
# The whole run keeps within GPU_CHECK_BUDGET seconds (default 360; 6 min, so about 7 with set-up): a part's
# time box shrinks, or it is skipped, so as to leave the later parts their minimum.
# Without CUDA the GPU parts are skipped (with the reason) and (a) skips its own tests: exit 0
# (GPU_CHECK_FORCE=1 runs them anyway, as gpu_train.py's tiny CPU runs: a check of this script).
# The exit status is the first failed part's (124: a timeout); gpu_check.json is always written.
set -u
root=$PWD
out=${OUT:-gpu_check_out}; case "$out" in /*) ;; *) out=$root/$out ;; esac
mkdir -p "$out"
photos=${FASTDATA_PHOTOS:-$root/../shared/data/photos/hymenoptera}
budget=${GPU_CHECK_BUDGET:-360}
start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")
trap 'rm -rf "$work"' EXIT
parts=$work/parts.tsv; : > "$parts"
rm -f "$out/gpu_check.json" "$out/summary.txt" "$out/pytest_cuda.xml"
: > "$out/pytest_cuda.log"; : > "$out/bench.log"
status=0

now() { local t=${EPOCHREALTIME:-$SECONDS}; echo "${t/,/.}"; }  # seconds (fractional with bash 5)
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# record NAME STATUS SECONDS RC LIMIT REASON: one line of parts.tsv, and say it
record() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" >> "$parts"
    echo "gpu_check: $1: $2${3:+ (${3} s)}${6:+: $6}"
}
# part NAME BOX RESERVE OK_RCS LOG CMD...: run CMD, its output appended to LOG, under `timeout` for
# BOX seconds or less: what the budget leaves once RESERVE seconds are kept for the parts after it
part() {
    local name=$1 box=$2 reserve=$3 okrcs=$4 log=$5; shift 5
    local left=$(( budget - (SECONDS - start) - reserve - 6 ))  # 6: timeout's kill grace, rounding
    local limit=$(( box < left ? box : left ))
    if (( limit < 10 )); then  # earlier parts took the time: a timeout, though it never started
        record "$name" timeout "" 124 "" "not started: $(( budget - (SECONDS - start) )) s of the ${budget} s budget left, and the later parts need ${reserve} s"
        [ "$status" = 0 ] && status=124
        return
    fi
    echo "=== $name (time box ${limit} s): $*" >> "$log"
    echo "gpu_check: $name: running (time box ${limit} s)"
    local t0 rc st reason=""
    t0=$(now)
    timeout -k 5 "$limit" "$@" >> "$log" 2>&1
    rc=$?
    case " $okrcs " in
        *" $rc "*) st=ok ;;
        *) if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then st=timeout reason="killed after its ${limit} s time box"
           else st=failed reason="exited $rc"; fi
           [ "$status" = 0 ] && status=$rc ;;
    esac
    record "$name" "$st" "$(since "$t0")" "$rc" "$limit" "$reason"
}
skip() { record "$1" skipped "" "" "" "$2"; }

# Is there CUDA? Asked once; from /tmp, like everything python here (see below).
(cd /tmp && timeout 60 python3 -c 'import json, torch
c = torch.cuda.is_available()
print(json.dumps({"cuda": c, "device": torch.cuda.get_device_name() if c else None,
                  "torch": torch.__version__, "cuda_version": torch.version.cuda}))') > "$work/probe.json" 2> "$work/probe.err"
probe_rc=$?
timeout 20 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$work/nvidia_smi.txt" 2>/dev/null
if [ "$probe_rc" != 0 ]; then
    cuda=0 why="the CUDA probe (python3 -c 'import torch; torch.cuda.is_available()') exited $probe_rc: $(tail -n 1 "$work/probe.err")"
elif grep -q '"cuda": true' "$work/probe.json"; then
    cuda=1 why=""
else
    cuda=0 why="no CUDA device (torch.cuda.is_available() is False)"
fi
if [ "${GPU_CHECK_FORCE:-0}" = 1 ] && (( ! cuda )); then  # to try this script itself: the CPU fallbacks
    echo "gpu_check: GPU_CHECK_FORCE=1: running the GPU parts anyway ($why)"
    cuda=1 why=""
fi
echo "gpu_check: $(cat "$work/probe.json" 2>/dev/null)${why:+ -- $why}"

# minimum seconds kept for each later part (when it runs), and for the summary
keep_stream=20 keep_decode=35 keep_train=75 keep_cores=60 keep_memory=30 keep_profile=40 keep_summary=5
(( cuda )) || keep_stream=0 keep_decode=0 keep_train=0 keep_cores=0 keep_memory=0 keep_profile=0

# (a) from /tmp: "python3 -m pytest" in the checkout would put its source tree (no compiled decoder, no
# fastdata.converters) ahead of the installed project that setup.sh built
in_tmp=(bash -c 'cd /tmp && exec "$@"' in_tmp)
pytest=(python3 -m pytest -q -p no:cacheprovider -m cuda -rs --rootdir "$root")
per_test=() per_test_stream=()  # pytest-timeout's per-test limit, where it is installed
if (cd /tmp && python3 -c 'import pytest_timeout' 2>/dev/null); then
    per_test=(-p timeout --timeout 120) per_test_stream=(-p timeout --timeout 45)
fi
part tests 150 $(( keep_stream + keep_decode + keep_train + keep_cores + keep_memory + keep_profile + keep_summary )) "0" "$out/pytest_cuda.log" \
    "${in_tmp[@]}" "${pytest[@]}" ${per_test[@]+"${per_test[@]}"} --junitxml="$out/pytest_cuda.xml" \
    "$root/tests/gpu" "$root/tests/loading" "$root/tests/dali"
if (( cuda )); then
    # the same test without the stream guard must FAIL (rc 1): proof that it can catch the hazard
    part stream_test 60 $(( keep_decode + keep_train + keep_cores + keep_memory + keep_profile + keep_summary )) "0 1" "$out/pytest_cuda.log" \
        env FASTDATA_TEST_UNGUARDED=1 "${in_tmp[@]}" "${pytest[@]}" ${per_test_stream[@]+"${per_test_stream[@]}"} \
        --junitxml="$work/pytest_stream.xml" "$root/tests/gpu/test_gpu_cuda.py" -k "${GPU_CHECK_STREAM_K:-stream or overwrite}"
else
    skip stream_test "$why"
fi

# (b) (c) (d): plain "python3 benchmarks/gpu_train.py" from the root puts benchmarks/, not the source
# tree, first on sys.path, so fastdata is setup.sh's install
bench=(python3 benchmarks/gpu_train.py "$photos/train" --batch 256)
if (( cuda )); then
    part decode_only 100 $(( keep_train + keep_cores + keep_memory + keep_profile + keep_summary )) "0" "$out/bench.log" \
        "${bench[@]}" --decode-only --warmup 8 --steps 30 --feed-timeout 30 --json "$work/gpu_decode.json" \
        --feeds fastdata-cuda-processes:2:torchvision,fastdata-cuda-processes:4:torchvision,fastdata-cuda-processes:8:torchvision,fastdata-cuda-processes:2:nvimgcodec,fastdata-cuda-processes:4:nvimgcodec,fastdata-hybrid-processes:4,fastdata-hybrid-processes:8,fastdata-hybrid-processes:8:torchvision,fastdata-cpu:4
    part train 180 $(( keep_cores + keep_memory + keep_profile + keep_summary )) "0" "$out/bench.log" \
        "${bench[@]}" --warmup 5 --steps 30 --feed-timeout 45 --json "$work/gpu_train.json" \
        --feeds synthetic,torchvision:15,fastdata-cpu:4,fastdata-cpu:8,fastdata-cpu:15,fastdata-cuda-processes:2,fastdata-cuda-processes:4,fastdata-hybrid-processes:2,fastdata-hybrid-processes:4
    # each budget is one process pinned from its start (gpu_train.py --cores); a failed budget leaves the other
    part core_budget 130 $(( keep_memory + keep_profile + keep_summary )) "0" "$out/bench.log" \
        bash -c 'rc=0; for n in 8 4; do "$@" --cores "$n" --warmup 5 --steps 30 --feed-timeout 40 \
                   --json "'"$work"'/gpu_train_cores$n.json" --feeds "synthetic,fastdata-cpu:$((n - 1)),fastdata-cuda-processes:$((n > 4 ? 4 : n - 1)),fastdata-hybrid-processes:$((n - 1))" || rc=$?
                 done; exit $rc' core_budget "${bench[@]}"
    part memory 60 $(( keep_profile + keep_summary )) "0" "$out/bench.log" \
        "${bench[@]}" --memory-epochs 5 --epoch-batches 16 --feed-timeout 45 --json "$work/gpu_memory.json" \
        --feeds fastdata-cuda-processes:4
    # (e) where the time goes: torch.profiler over 20 steps, decode-only then training (tables in profile.txt)
    part profile 90 "$keep_summary" "0" "$out/bench.log" bash -c "python3 benchmarks/gpu_profile.py '$photos/train' \
        --out '$out/profile.txt' && python3 benchmarks/gpu_profile.py '$photos/train' --train --feed fastdata-hybrid-processes:4 \
        --out '$out/profile.txt'"
else
    skip decode_only "$why"; skip train "$why"; skip core_budget "$why"; skip memory "$why"; skip profile "$why"
fi

# gpu_check.json and summary.txt (stdlib only); should that fail, the parts' own files go to $OUT
wall=$(( SECONDS - start ))
timeout 20 python3 benchmarks/gpu_check_summary.py --parts "$work" --out "$out" --wall "$wall" --budget "$budget"
rc=$?
if [ "$rc" != 0 ]; then
    echo "gpu_check: gpu_check_summary.py exited $rc; copying the parts' files to $out" >&2
    for f in gpu_decode.json gpu_train.json gpu_train_cores8.json gpu_train_cores4.json gpu_memory.json parts.tsv; do [ -f "$work/$f" ] && cp "$work/$f" "$out/"; done
    printf '{"device": null, "date": "%s", "summary_error": "gpu_check_summary.py exited %s: see parts.tsv and the gpu_*.json beside this file", "parts": {}}\n' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$rc" > "$out/gpu_check.json"
    [ "$status" = 0 ] && status=$rc
fi
[ -s "$out/bench.log" ] || rm -f "$out/bench.log"
exit "$status"
