#!/usr/bin/env bash
# The measurement run on a Linux GPU machine with only PyTorch (issue 26 item 2): no Node.js (the
# bundle brings it), no internet, perhaps no Vulkan loader (brought as a .deb, unpacked into the
# work folder). Needs bench/gpu-machine/.prepared (prepare.sh). Steps, most important first, each
# cell under its own limit, the results tarred into $OUT/results.tar after every step (so a run
# cut short keeps what ended) with the log in $OUT/run.log:
#   1. the machine (nvidia-smi, uname, uptime, the Vulkan adapter as Dawn's lines show it)
#   2. the SD decoder's weights (distvae's seeded synthetic ones) and latents, for PyTorch
#   3. distvae whole at 1024², fp32 and fp16, against the CPU decode    (bench/gpu.ts via the bundle)
#   4. PyTorch's diffusers AutoencoderKL at 1024² on CUDA: fp32, fp16, bf16 (torch_decode.py)
#   5. the arms at 1024²: layout NCHW/NHWC, storage-buffer cache modes, profiled (bench/gpu-arms.ts)
#   6. distvae tiles at 2048² on 1 and 4 ranks sharing the GPU, fp32 and fp16
#   7. PyTorch at 2048²: fp32, fp16
#   8. distvae tiles and shard at 1024² on 1, 2, 4 ranks, fp32 and fp16
#   9. distvae at 2048²: whole, shard on 1, 2, 4 ranks, tiles on 2 ranks
# A step starts only while --budget seconds have not passed since the start.
#
#   bash bench/gpu-machine/run.sh [--budget 420] [--cell-timeout 150] [--tiny] [--torch-device cpu]
# --tiny: the small SD-layout config at 64²/128² (the end-to-end check on lavapipe, no CUDA here;
# with --torch-device cpu the PyTorch arm runs on the CPU: fp32 and bf16).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
P="$HERE/.prepared"
OUT="${OUT:-$HERE/results}"
W="${WORK:-/tmp/distvae-gpu-run}"
BUDGET=420
CELL=150
TINY=0
TORCH_DEVICE=cuda
PYTHON="${PYTHON:-python3}"  # the python that holds torch (python3 on the GPU machine)
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) BUDGET="$2"; shift 2 ;;
    --cell-timeout) CELL="$2"; shift 2 ;;
    --tiny) TINY=1; shift ;;
    --torch-device) TORCH_DEVICE="$2"; shift 2 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -f "$P/distvae-linux-x64.tar.xz" ] || { echo "run.sh: no $P (run prepare.sh first)" >&2; exit 2; }
START=$(date +%s)
rm -rf "$W"; mkdir -p "$W/results" "$OUT"
LOG="$OUT/run.log"; : > "$LOG"
log() { echo "[run $(( $(date +%s) - START ))s] $*" | tee -a "$LOG"; }
left() { [ $(( $(date +%s) - START )) -lt "$BUDGET" ]; }
save() { tar -C "$W" -cf "$OUT/results.tar" results 2>/dev/null; }

if [ "$TINY" = 1 ]; then MODEL=sd-small; S1=64; S2=128; else MODEL=sd; S1=1024; S2=2048; fi
if [ "$TORCH_DEVICE" = cpu ]; then TORCH_DTYPES_1=fp32,bf16; TORCH_DTYPES_2=fp32; else TORCH_DTYPES_1=fp32,fp16,bf16; TORCH_DTYPES_2=fp32,fp16; fi

log "unpacking the bundle, diffusers"
tar -xJf "$P/distvae-linux-x64.tar.xz" -C "$W"
D="$W/distvae"; NODE="$D/node/bin/node"; LIB="$D/lib/distvae"
cp "$P"/js/*.mjs "$LIB/"
mkdir -p "$W/diffusers" && tar -xJf "$P/diffusers-src.tar.xz" -C "$W/diffusers"
DIFFUSERS_SRC="$W/diffusers/src"
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1'; then
  for f in "$P"/vulkan/*.deb; do [ -f "$f" ] && dpkg -x "$f" "$W/vulkan"; done
  export LD_LIBRARY_PATH="$W/vulkan/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "no Vulkan loader on the machine: using the carried one"
fi
if [ -z "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then
  for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json; do
    if [ -f "$icd" ]; then export VK_DRIVER_FILES="$icd"; log "Vulkan driver: $icd"; break; fi
  done
fi

log "1. the machine"
{
  echo "bundle: $(cat "$D/BUILD.json" | tr -d '\n')"; echo "prepared from commit $(cat "$P/COMMIT" 2>/dev/null)"
  echo "diffusers: $(cat "$P/DIFFUSERS_COMMIT" 2>/dev/null)"
  uname -a; uptime; nproc; free -g 2>/dev/null
  nvidia-smi 2>&1 || echo "no nvidia-smi"
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>&1
  echo "webgpu probe:"; "$D/bin/distvae" decode --help >/dev/null 2>&1 && echo "distvae runs"
} > "$W/results/machine.txt" 2>&1
save

COMMIT="$(cat "$P/COMMIT" 2>/dev/null || echo unknown)"
GPU=("$NODE" "$LIB/gpu.mjs" --preset gpu --cli "$D/bin/distvae" --models "$MODEL" --commit "$COMMIT" --work-dir "$W/bench" --cell-timeout "$CELL" --reference-timeout "$CELL")
gpu_step() { # name, then gpu.mjs options
  local name="$1"; shift
  if left; then log "$name"; "${GPU[@]}" --out "$W/results/gpu-$name" "$@" 2>&1 | tee -a "$LOG"; save; else log "skipped $name: budget spent"; fi
}
torch_step() { # size, dtypes
  local size="$1" dtypes="$2" dt
  for dt in ${dtypes//,/ }; do
    if left; then
      log "PyTorch $size² $dt on $TORCH_DEVICE"
      timeout -k 5 "$CELL" "$PYTHON" "$HERE/torch_decode.py" --vae "$W/sd-folder" --latents "$W/z-$size.npy" --diffusers-src "$DIFFUSERS_SRC" \
        --device "$TORCH_DEVICE" --dtypes "$dt" --compare "$W/bench/ref-$MODEL-$size-whole.npy" --fp32-out "$W/torch-fp32-$size.npy" --results "$W/results/torch.jsonl" --label "$size" 2>&1 | tail -n 3 | tee -a "$LOG"
      [ "${PIPESTATUS[0]}" = 124 ] && echo "{\"arm\":\"pytorch-diffusers\",\"label\":\"$size\",\"dtype\":\"$dt\",\"status\":\"timed-out\",\"limitSeconds\":$CELL}" >> "$W/results/torch.jsonl"
      save
    else log "skipped PyTorch $size² $dt: budget spent"; fi
  done
}

log "2. weights and latents"
"$NODE" "$LIB/gpu.mjs" --print-config "$MODEL" > "$W/config.json"
"$NODE" "$LIB/synthetic-vae-folder.mjs" --config "$W/config.json" --out "$W/sd-folder" --seed 0 --latent "1,4,$((S1 / 8)),$((S1 / 8))" --latent-seed 1 --latent-out "$W/z-$S1.npy" | tee -a "$LOG"
"$NODE" "$LIB/synthetic-vae-folder.mjs" --config "$W/config.json" --out "$W/sd-folder" --seed 0 --latent "1,4,$((S2 / 8)),$((S2 / 8))" --latent-seed 1 --latent-out "$W/z-$S2.npy" >/dev/null

gpu_step "$S1-whole" --sizes "$S1" --strategies whole --ranks 1
torch_step "$S1" "$TORCH_DTYPES_1"
if left; then
  log "5. arms at $S1²"
  "$NODE" "$LIB/gpu-arms.mjs" --config "$MODEL" --size "$S1" --arm-timeout "$CELL" --commit "$COMMIT" --out "$W/results/gpu-arms-$S1" 2>&1 | tee -a "$LOG"; save
fi
gpu_step "$S2-tile" --sizes "$S2" --strategies tile --ranks 1,4 --no-reference
torch_step "$S2" "$TORCH_DTYPES_2"
gpu_step "$S1-dist" --sizes "$S1" --strategies tile,shard --ranks 1,2,4
gpu_step "$S2-rest" --sizes "$S2" --strategies whole,shard --ranks 1,2,4 --no-reference
gpu_step "$S2-tile2" --sizes "$S2" --strategies tile --ranks 2 --no-reference
uptime >> "$W/results/machine.txt"
save
log "done; results in $OUT/results.tar"
