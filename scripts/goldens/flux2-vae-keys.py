"""Golden for the single-file Flux.2 (`ae.safetensors`, BFL's layout) AutoencoderKLFlux2 key mapping, made with diffusers' own code.

A small AutoencoderKLFlux2 with the published layout (4 levels, 2 layers per block, quant convs,
batch-norm statistics) is built by diffusers. Its state dict is written in Flux.2's original
layout: the body by diffusers' convert_vae_state_dict (scripts/convert_diffusers_to_original_
stable_diffusion.py, the ldm names Flux.2 keeps), then `quant_conv.` moved under `encoder.` and
`post_quant_conv.` under `decoder.`, where DIFFUSERS_VAE_TO_FLUX2_MAPPING of diffusers'
scripts/convert_flux2_to_diffusers.py says they live. It is read back by that script's own
convert_flux2_vae_checkpoint_to_diffusers and loaded strictly into the model; the round trip must
reproduce the state dict exactly. The JSON records, for every decoder key (and bn.*), the
original key and shape next to the diffusers key and shape.

convert_flux2_to_diffusers.py parses arguments and imports transformers / accelerate at module
level, so its converter is taken from the file by name (the AST definitions below, unmodified)
and run alone.

What the golden is for and how it sits among the others: src/families/testing/goldens/README.md.

Run (difref's environment, the diffusers tree it exports, and the scripts from the mirror):
  G="git --git-dir=/work/.mirror/huggingface+diffusers/repo"
  $G show <commit>:scripts/convert_diffusers_to_original_stable_diffusion.py > /tmp/d2o.py
  $G show <commit>:scripts/convert_flux2_to_diffusers.py > /tmp/flux2conv.py
  /usr/bin/python3 scripts/goldens/flux2-vae-keys.py /tmp/d2o.py /tmp/flux2conv.py src/sources/testing/goldens/flux2-vae-keys.json <commit>
"""
import ast
import importlib.util
import json
import sys

sys.path.insert(0, "/work/shared/tools/difref")
import difref_common  # noqa: E402  (sets up the diffusers env)
import torch  # noqa: E402

d2o_path, flux2_path, out, commit = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("d2o", d2o_path)
d2o = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d2o)

WANTED = {
    "DIFFUSERS_VAE_TO_FLUX2_MAPPING",
    "conv_attn_to_linear",
    "update_vae_resnet_ldm_to_diffusers",
    "update_vae_attentions_ldm_to_diffusers",
    "convert_flux2_vae_checkpoint_to_diffusers",
}
with open(flux2_path) as f:
    tree = ast.parse(f.read())
nodes = [
    n for n in tree.body
    if (isinstance(n, ast.FunctionDef) and n.name in WANTED)
    or (isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in WANTED for t in n.targets))
]
assert {getattr(n, "name", None) or n.targets[0].id for n in nodes} == WANTED
flux2conv = {}
exec(compile(ast.Module(body=nodes, type_ignores=[]), flux2_path, "exec"), flux2conv)

config = {
    "block_out_channels": [8, 8, 16, 16],
    "layers_per_block": 2,
    "norm_num_groups": 4,
    "latent_channels": 8,
    "patch_size": [2, 2],
    "down_block_types": ["DownEncoderBlock2D"] * 4,
    "up_block_types": ["UpDecoderBlock2D"] * 4,
}
torch.manual_seed(0)
model = difref_common.build("AutoencoderKLFlux2", config)
# Distinct random values everywhere, so each converted tensor identifies its source key.
state = {k: torch.randn(v.shape) if v.is_floating_point() else v.clone() for k, v in model.state_dict().items()}
original = {}
for k, v in d2o.convert_vae_state_dict(state).items():
    if k.startswith("quant_conv."):
        k = "encoder." + k
    elif k.startswith("post_quant_conv."):
        k = "decoder." + k
    original[k] = v
back = flux2conv["convert_flux2_vae_checkpoint_to_diffusers"](original, dict(model.config))
missing, unexpected = model.load_state_dict(back, strict=True)
assert set(back) == set(state) - {"bn.num_batches_tracked"}, sorted(set(back) ^ set(state))[:10]
assert all(torch.equal(back[k], state[k]) for k in back)

# Which original key became which diffusers key: match by the (distinct) values.
pairs = []
for k in sorted(back):
    if not (k.startswith("decoder.") or k.startswith("post_quant_conv.") or k.startswith("bn.")):
        continue
    src = [ok for ok, ov in original.items() if ov.is_floating_point() and ov.numel() == back[k].numel() and torch.equal(ov.reshape(back[k].shape), back[k])]
    assert len(src) == 1, (k, src)
    pairs.append({"original": src[0], "originalShape": list(original[src[0]].shape), "diffusers": k, "shape": list(back[k].shape)})

with open(out, "w") as f:
    json.dump({
        "provenance": {
            "diffusers_commit": commit,
            "made_by": "scripts/goldens/flux2-vae-keys.py: diffusers' convert_vae_state_dict (scripts/convert_diffusers_to_original_stable_diffusion.py) plus the quant convs moved under encoder./decoder., then convert_flux2_vae_checkpoint_to_diffusers (scripts/convert_flux2_to_diffusers.py), loaded strictly, round trip asserted exact",
            "config": config,
            "encoder_keys": sum(1 for k in original if k.startswith("encoder.")),
            "other_original_keys": sorted(k for k in original if not k.startswith("encoder.") and not any(p["original"] == k for p in pairs)),
        },
        "keys": pairs,
    }, f, indent=1)
print(f"{len(pairs)} keys")
