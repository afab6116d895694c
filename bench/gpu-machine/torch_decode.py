#!/usr/bin/env python3
"""PyTorch's own decode beside distvae's (issue 26 item 2): diffusers' AutoencoderKL, built from the
same config.json, loaded with the same decoder weights (the safetensors file that
scripts/synthetic-vae-folder.ts --config writes: distvae's seeded synthetic weights), decoding the
same latent (.npy) on CUDA in fp32, fp16 and bf16. Prints one JSON line per dtype and appends it to
--results (so a run cut short keeps what ended): median of --repeat warm decodes after one warm-up,
torch.cuda.max_memory_allocated, and max abs against the fp32 decode of this run and, with
--compare, against a distvae output (.npy).

The diffusers source travels with the script (--diffusers-src, exported by prepare.sh from a git
mirror); nothing is installed. `--device cpu` runs the same path where there is no CUDA (the
end-to-end check on a machine without a GPU; fp16 on CPU is slow or refused by some ops, and is
recorded as it ends).

  python3 torch_decode.py --vae DIR --latents z.npy --diffusers-src DIR [--device cuda|cpu]
                          [--dtypes fp32,fp16,bf16] [--repeat 3] [--compare distvae.npy] [--results F.jsonl]
                          [--fp32-out torch-fp32.npy]
"""
import argparse
import json
import os
import struct
import sys
import time

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def read_safetensors(path, torch):
    """The tensors of a safetensors file (float32 here), read without the safetensors package."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    kinds = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[a:b]), dtype=kinds[info["dtype"]]) if b > a else torch.empty(0)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vae", required=True, help="folder with config.json and diffusion_pytorch_model.safetensors (decoder tensors)")
    ap.add_argument("--latents", required=True)
    ap.add_argument("--diffusers-src", help="a folder holding the diffusers package (put first on sys.path)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtypes", default="fp32,fp16,bf16")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--compare", help="a distvae decode (.npy) of the same latent to compare the fp32 decode with")
    ap.add_argument("--fp32-out", help="the fp32 decode is saved here (.npy); a later run's other dtypes compare with it")
    ap.add_argument("--results", help="JSON lines file each dtype's result is appended to as it ends")
    ap.add_argument("--label", default="")
    args = ap.parse_args()

    if args.diffusers_src:
        sys.path.insert(0, args.diffusers_src)
    if os.environ.get("DIFREF_DIR"):  # development only: torch 1.13 needs difref's shims to import diffusers
        sys.path.insert(0, os.environ["DIFREF_DIR"])
        import difref_env  # noqa: F401
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch
    from diffusers.models.autoencoders.autoencoder_kl import AutoencoderKL
    import diffusers

    with open(os.path.join(args.vae, "config.json")) as f:
        config = json.load(f)
    config = {k: v for k, v in config.items() if not k.startswith("_")}
    weights = read_safetensors(os.path.join(args.vae, "diffusion_pytorch_model.safetensors"), torch)
    z = torch.from_numpy(np.load(args.latents).astype(np.float32))
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    reference = None
    if args.fp32_out and os.path.exists(args.fp32_out):  # an earlier run's fp32 decode: cells run one dtype per process
        reference = torch.from_numpy(np.load(args.fp32_out).astype(np.float32))
    for name in args.dtypes.split(","):
        dtype = getattr(torch, DTYPES[name])
        result = {
            "arm": "pytorch-diffusers",
            "label": args.label,
            "dtype": name,
            "device": torch.cuda.get_device_name(device) if cuda else args.device,
            "torch": torch.__version__,
            "diffusers": diffusers.__version__,
            "latent": list(z.shape),
            "repeat": args.repeat,
        }
        t_start = time.perf_counter()
        try:
            vae = AutoencoderKL(**config)
            missing, unexpected = vae.load_state_dict(weights, strict=False)
            decoder_missing = [k for k in missing if k.startswith(("decoder.", "post_quant_conv."))]
            if unexpected or decoder_missing:
                raise RuntimeError(f"weights do not match: unexpected {unexpected[:5]}, missing decoder keys {decoder_missing[:5]}")
            vae = vae.to(device=device, dtype=dtype).eval()
            zz = z.to(device=device, dtype=dtype)
            if cuda:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)
            times = []
            with torch.no_grad():
                for i in range(args.repeat + 1):
                    if cuda:
                        torch.cuda.synchronize(device)
                    t0 = time.perf_counter()
                    out = vae.decode(zz).sample
                    if cuda:
                        torch.cuda.synchronize(device)
                    times.append(time.perf_counter() - t0)
            sample = out.float().cpu()
            result.update(
                status="ok",
                warmupSeconds=times[0],
                decodeSeconds=times[1:],
                seconds=sorted(times[1:])[len(times[1:]) // 2] if len(times) > 1 else times[0],
                deviceMaxAllocatedBytes=torch.cuda.max_memory_allocated(device) if cuda else None,
                finite=bool(torch.isfinite(sample).all()),
                shape=list(sample.shape),
            )
            if name == "fp32":
                reference = sample
                if args.fp32_out:
                    np.save(args.fp32_out, sample.numpy())
            if reference is not None:
                result["maxAbsVsFp32"] = float((sample - reference).abs().max())
            if args.compare and name == "fp32" and os.path.exists(args.compare):
                theirs = torch.from_numpy(np.load(args.compare).astype(np.float32))
                result["maxAbsVsDistvae"] = float((sample - theirs).abs().max())
            del vae, zz, out
            if cuda:
                torch.cuda.empty_cache()
        except Exception as e:  # a dtype the device cannot run is a result, not the end of the run
            result.update(status="failed", note=f"{type(e).__name__}: {str(e)[:300]}")
        result["wallSeconds"] = time.perf_counter() - t_start
        line = json.dumps(result)
        print(line, flush=True)
        if args.results:
            with open(args.results, "a") as f:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
