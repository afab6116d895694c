"""Golden for the single-file (original ldm) AutoencoderKL key mapping, made with diffusers' own code.

A small AutoencoderKL with SD's layout (4 levels, 2 layers per block) is built by diffusers; its
state dict is written in the original layout by diffusers' scripts/convert_diffusers_to_original_
stable_diffusion.py (convert_vae_state_dict), prefixed with `first_stage_model.` plus a UNet key
of a full checkpoint, and read back by diffusers' loaders/single_file_utils.py
convert_ldm_vae_checkpoint. The round trip must reproduce the state dict exactly; the JSON
records, for every key (decoder, encoder and both quant convs), the ldm key and shape next to the
diffusers key and shape.

What the golden is for and how it sits among the others: src/families/testing/goldens/README.md.

Run (difref's environment, the diffusers tree it exports, and the script from the mirror):
  git --git-dir=/work/.mirror/huggingface+diffusers/repo show HEAD:scripts/convert_diffusers_to_original_stable_diffusion.py > /tmp/d2o.py
  /usr/bin/python3 scripts/goldens/ldm-vae-keys.py /tmp/d2o.py src/sources/testing/goldens/ldm-vae-keys.json <diffusers commit>
"""
import importlib.util
import json
import sys

sys.path.insert(0, "/work/shared/tools/difref")
import difref_common  # noqa: E402  (sets up the diffusers env)
import torch  # noqa: E402
from diffusers.loaders.single_file_utils import convert_ldm_vae_checkpoint  # noqa: E402

script, out, commit = sys.argv[1], sys.argv[2], sys.argv[3]
spec = importlib.util.spec_from_file_location("d2o", script)
d2o = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d2o)

config = {
    "block_out_channels": [8, 8, 16, 16],
    "layers_per_block": 2,
    "norm_num_groups": 4,
    "latent_channels": 4,
    "down_block_types": ["DownEncoderBlock2D"] * 4,
    "up_block_types": ["UpDecoderBlock2D"] * 4,
}
torch.manual_seed(0)
model = difref_common.build("AutoencoderKL", config)
# Distinct random values everywhere, so each converted tensor identifies its source key.
state = {k: torch.randn(v.shape) for k, v in model.state_dict().items()}
ldm = {f"first_stage_model.{k}": v for k, v in d2o.convert_vae_state_dict(state).items()}
ldm["model.diffusion_model.input_blocks.0.0.weight"] = torch.zeros(1)
back = convert_ldm_vae_checkpoint(ldm, dict(model.config))
assert set(back) == set(state), (sorted(set(back) ^ set(state)))[:10]
assert all(torch.equal(back[k], state[k]) for k in state)

# Which ldm key became which diffusers key: match by the (distinct) values.
pairs = []
for k in sorted(back):
    src = [lk for lk, lv in ldm.items() if lv.numel() == back[k].numel() and torch.equal(lv.reshape(back[k].shape), back[k])]
    assert len(src) == 1, (k, src)
    pairs.append({"ldm": src[0], "ldmShape": list(ldm[src[0]].shape), "diffusers": k, "shape": list(back[k].shape)})

with open(out, "w") as f:
    json.dump({
        "provenance": {
            "diffusers_commit": commit,
            "made_by": "scripts/goldens/ldm-vae-keys.py: diffusers' convert_vae_state_dict (scripts/convert_diffusers_to_original_stable_diffusion.py) then convert_ldm_vae_checkpoint (src/diffusers/loaders/single_file_utils.py), round trip asserted exact",
            "config": config,
        },
        "keys": pairs,
    }, f, indent=1)
print(f"{len(pairs)} keys")
