"""Turn a fine-tuned checkpoint of the embedded model into a llama.cpp LoRA adapter (GGUF).

llama.cpp serves the base GGUF with an adapter beside it (`rlforge run --adapter FILE`), so a
trained model can be served without torch. The adapter is written in the GGUF LoRA layout
llama.cpp loads: `<base tensor>.lora_a` of shape (r, n_in) and `.lora_b` of shape
(n_out, r), scaled by `adapter.lora.alpha` / r.

- A checkpoint `learn_grpo.py --lora RANK` trained keeps its adapter in `adapter/`: it is
  written as it is, so llama.cpp serves exactly the trained model (up to the base's
  quantization).
- A checkpoint of every weight is approximated: each projection's change (trained weight
  minus base weight) becomes its best rank-`--rank` approximation (truncated SVD). Norms
  and the embedding are not adapted; the script prints the share of each change kept.

    python examples/gguf_adapter.py demo/learning/trained --out triage.gguf [--rank 16]

Needs `pip install 'rlforge[learn]'` (torch, transformers, gguf).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

# Transformers' names of a llama block's projections → the GGUF tensor names llama.cpp uses.
PROJECTIONS = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
               "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
               "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_order(delta: Any, heads: int) -> Any:
    """The rows of a query or key projection as a llama GGUF stores them: each head's two
    rotary halves interleaved (the order Transformers undoes when it loads the GGUF)."""
    out = delta.shape[0]
    return delta.reshape(heads, 2, out // heads // 2, *delta.shape[1:]).swapaxes(1, 2).reshape(delta.shape)


def low_rank(delta: Any, rank: int) -> tuple[Any, Any, float]:
    """(a, b, kept): b @ a is `delta`'s best rank-`rank` approximation; `kept` is the share
    of its squared norm that the approximation holds."""
    import torch

    u, s, vh = torch.linalg.svd(delta.float(), full_matrices=False)
    r = min(rank, s.numel())
    total = float((s ** 2).sum()) or 1.0
    return vh[:r].contiguous(), (u[:, :r] * s[:r]).contiguous(), float((s[:r] ** 2).sum()) / total


def _writer(out: Path, alpha: float) -> Any:
    import gguf

    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_float32("adapter.lora.alpha", float(alpha))
    return writer


def _close(writer: Any) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def write_peft_adapter(adapter: Path, out: Path, *, heads: dict[str, int]) -> int:
    """Write the peft LoRA adapter in directory `adapter` as a GGUF adapter; its rank."""
    import json

    import numpy as np
    from safetensors.numpy import load_file

    config = json.loads((adapter / "adapter_config.json").read_text())
    weights = load_file(str(adapter / "adapter_model.safetensors"))
    writer = _writer(out, config["lora_alpha"])
    for key in sorted(weights):  # base_model.model.model.layers.<i>.<module>.<proj>.lora_A.weight
        parts = key.split(".")
        if parts[-2] != "lora_A":
            continue
        kind = PROJECTIONS[".".join(parts[5:7])]
        a = weights[key]
        b = weights[key.replace(".lora_A.", ".lora_B.")]
        if kind in heads:
            b = gguf_order(b, heads[kind])
        tensor = f"blk.{parts[4]}.{kind}.weight"
        writer.add_tensor(f"{tensor}.lora_a", a.astype(np.float16))
        writer.add_tensor(f"{tensor}.lora_b", np.ascontiguousarray(b).astype(np.float16))
    _close(writer)
    return int(config["r"])


def write_adapter(trained: Path, out: Path, *, rank: int = 16, base: Path | None = None) -> dict[str, float]:
    """Write the adapter for checkpoint `trained` over the base GGUF (`base`, by default the
    embedded model's); return the share of the change kept, per projection kind."""
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from learn_grpo import load_policy

    base_model, _ = load_policy(base)
    tuned = AutoModelForCausalLM.from_pretrained(str(trained), dtype=torch.float32)
    config = base_model.config
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    tuned_weights = dict(tuned.named_parameters())
    writer = _writer(out, rank)
    kept: dict[str, list[float]] = {}
    with torch.no_grad():
        for name, weight in base_model.named_parameters():
            parts = name.split(".")  # model.layers.<i>.<module>.<proj>.weight
            if len(parts) != 6 or parts[1] != "layers" or parts[-1] != "weight":
                continue
            kind = PROJECTIONS.get(".".join(parts[3:5]))
            if kind is None:
                continue
            delta = tuned_weights[name].detach() - weight.detach()
            if kind in heads:
                delta = gguf_order(delta, heads[kind])
            a, b, share = low_rank(delta, rank)
            kept.setdefault(kind, []).append(share)
            tensor = f"blk.{parts[2]}.{kind}.weight"
            writer.add_tensor(f"{tensor}.lora_a", a.numpy().astype(np.float16))
            writer.add_tensor(f"{tensor}.lora_b", b.numpy().astype(np.float16))
    _close(writer)
    return {kind: sum(v) / len(v) for kind, v in kept.items()}


def describe(out: Path, *, rank: int, tasks: Path, generators: list[str], how: str) -> Path:
    """Write `out` with .json: what the adapter is and the records it was trained on (the
    source keys of the train split's tasks of `generators` in `tasks`), so anyone can check
    that a held-out task was not among them."""
    import json

    import polars as pl

    from rlforge.local_model import find_gguf

    manifest = pl.read_parquet(tasks / "manifest.parquet").filter(
        (pl.col("split") == "train") & pl.col("generator").is_in(generators))
    keys = sorted({key for row in manifest.iter_rows(named=True) for key in row["source_keys"]})
    path = out.with_suffix(".json")
    path.write_text(json.dumps({
        "adapter": out.name, "base_model": find_gguf().name, "rank": rank, "how": how,
        "generators": generators, "train_tasks": manifest.height, "trained_on": keys},
        indent=1) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trained", type=Path, help="a checkpoint directory learn_grpo.py saved")
    parser.add_argument("--out", type=Path, required=True, help="the adapter file to write (.gguf)")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--base", type=Path, default=None,
                        help="the base GGUF the checkpoint was trained from (default: the embedded model)")
    parser.add_argument("--tasks", type=Path, default=None,
                        help="the build-tasks output it was trained on: writes OUT.json "
                        "listing the train split's records (with --generators)")
    parser.add_argument("--generators", default="tickets.triage")
    parser.add_argument("--how", default="", help="how it was trained, for OUT.json")
    args = parser.parse_args()
    if (args.trained / "adapter" / "adapter_config.json").is_file():
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(args.trained))
        rank = write_peft_adapter(args.trained / "adapter", args.out, heads={
            "attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads})
        print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB): the trained LoRA "
              f"adapter of rank {rank}, as it is")
    else:
        kept = write_adapter(args.trained, args.out, rank=args.rank, base=args.base)
        rank = args.rank
        print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB, rank {rank}); share "
              "of each projection's change kept: "
              + ", ".join(f"{kind} {share:.2f}" for kind, share in sorted(kept.items())))
    if args.tasks:
        generators = [g.strip() for g in args.generators.split(",")]
        print(f"wrote {describe(args.out, rank=rank, tasks=args.tasks, generators=generators, how=args.how)}")


if __name__ == "__main__":
    main()
