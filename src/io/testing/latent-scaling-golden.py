# Goldens for src/io/latent-scaling.test.ts: each pipeline's latent scaling, written exactly as the
# diffusers pipelines write it (the line each mirrors is named), on seeded float32 latents.
# Run: /usr/bin/python3 src/io/testing/latent-scaling-golden.py > src/io/testing/latent-scaling-golden.json
import json, torch

torch.manual_seed(0)
g = lambda *s: (torch.randn(*s) * 2).float()
out = {"torch": torch.__version__, "cases": {}}

def case(name, x, scaled, unscaled, **params):
    out["cases"][name] = {
        "dims": list(x.shape), "x": x.flatten().tolist(),
        "scaledDims": list(scaled.shape), "scaled": scaled.flatten().tolist(),
        "unscaled": unscaled.flatten().tolist(), **params,
    }

# SD 1.x img2img: init_latents = self.vae.config.scaling_factor * init_latents; decode: latents / scaling_factor
x = g(1, 4, 2, 3); sf = 0.18215
case("sd", x, sf * x, x / sf, scalingFactor=sf)
# SD3 / FLUX.1: (image_latents - shift_factor) * scaling_factor; decode: latents / scaling_factor + shift_factor
x = g(1, 16, 2, 2); sf, sh = 0.3611, 0.1159
case("sd3", x, (x - sh) * sf, (x / sf) + sh, scalingFactor=sf, shiftFactor=sh)
# Wan 2.1 video2video / Qwen-Image img2img: (x - mean) * (1 / std); decode: latents / (1 / std) + mean
x = g(1, 3, 2, 2, 2); mean = [-0.7571, -0.7089, -0.9113]; std = [2.8184, 1.4541, 2.3275]
m = torch.tensor(mean).view(1, 3, 1, 1, 1); inv = 1.0 / torch.tensor(std).view(1, 3, 1, 1, 1)
case("wan", x, (x - m) * inv, x / inv + m, latentsMean=mean, latentsStd=std)
# SDXL img2img with latents_mean/std: (x - mean) * scaling_factor / std; decode: x * std / scaling_factor + mean
x = g(1, 2, 2, 2); mean = [0.5, -0.25]; std = [1.5, 0.75]; sf = 0.13025
m = torch.tensor(mean).view(1, 2, 1, 1); s = torch.tensor(std).view(1, 2, 1, 1)
case("sdxl-mean", x, (x - m) * sf / s, x * s / sf + m, latentsMean=mean, latentsStd=std, scalingFactor=sf)
# FLUX.2 _encode_vae_image / output: patchify, (x - bn_mean) / sqrt(bn_var + eps); decode: x * std + mean, unpatchify
x = g(1, 2, 4, 6); eps = 1e-4
bm = torch.randn(8).float(); bv = (torch.rand(8) + 0.1).float()
p = x.view(1, 2, 2, 2, 3, 2).permute(0, 1, 3, 5, 2, 4).reshape(1, 8, 2, 3)
bs = torch.sqrt(bv.view(1, -1, 1, 1) + eps)
scaled = (p - bm.view(1, -1, 1, 1)) / bs
y = scaled * bs + bm.view(1, -1, 1, 1)
un = y.reshape(1, 2, 2, 2, 2, 3).permute(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6)
out["cases"]["flux2"] = {
    "dims": list(x.shape), "x": x.flatten().tolist(), "scaledDims": list(scaled.shape), "scaled": scaled.flatten().tolist(),
    "unscaled": un.flatten().tolist(), "bnMean": bm.tolist(), "bnVar": bv.tolist(), "eps": eps,
}
print(json.dumps(out))
