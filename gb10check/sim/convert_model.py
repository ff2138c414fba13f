"""Turn SmolLM2-135M-Instruct's GGUF into a safetensors folder that vLLM for CPU can serve with TP=2.

Run with the vLLM virtualenv's Python (it needs torch and transformers, which the suite's own
environment does not carry): python convert_model.py GGUF OUT_DIR CHAT_TEMPLATE

Why each step:
- vLLM for CPU cannot serve the GGUF directly, so it is dequantized once and saved as safetensors.
- Tensor parallelism over 2 ranks needs head counts divisible by 2; SmolLM2-135M has 9 query and
  3 KV heads. One KV head and its 3 query heads are appended with zero weights, and the output
  projection's columns for them are zero, so the new heads add exactly nothing to any answer.
- Shards of 100 MB give the model a safetensors index with total_size, like the large models the
  preflight sizing reads.
- SmolLM2's own chat template ignores `tools`; the template written here renders them for the
  hermes tool parser and honours `enable_thinking`.
"""

import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig


def pad_heads(model, heads: int, kv_heads: int) -> None:
    cfg = model.config
    head_dim = cfg.hidden_size // cfg.num_attention_heads
    for layer in model.model.layers:
        att = layer.self_attn
        for name, n in (("q_proj", heads), ("k_proj", kv_heads), ("v_proj", kv_heads)):
            old = getattr(att, name)
            new = torch.nn.Linear(old.in_features, n * head_dim, bias=old.bias is not None, dtype=old.weight.dtype)
            with torch.no_grad():
                new.weight.zero_()
                new.weight[: old.out_features] = old.weight
                if old.bias is not None:
                    new.bias.zero_()
                    new.bias[: old.out_features] = old.bias
            setattr(att, name, new)
        old = att.o_proj
        new = torch.nn.Linear(heads * head_dim, old.out_features, bias=old.bias is not None, dtype=old.weight.dtype)
        with torch.no_grad():
            new.weight.zero_()
            new.weight[:, : old.in_features] = old.weight
            if old.bias is not None:
                new.bias.copy_(old.bias)
        att.o_proj = new
    cfg.head_dim = head_dim
    cfg.num_attention_heads = heads
    cfg.num_key_value_heads = kv_heads


def main(gguf: str, out: str, template: str) -> None:
    path = Path(gguf)
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    loaded = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32,
                                                  quantization_config=GgufConfig(dequantize=True))
    # A plain model of the same shape, so nothing of the GGUF loader is left to refuse serialization.
    config = loaded.config
    config.quantization_config = None
    del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    pad_heads(model, 12, 4)
    model.to(torch.bfloat16)
    model.config.dtype = torch.bfloat16
    tok.chat_template = Path(template).read_text()
    model.save_pretrained(out, max_shard_size="100MB", safe_serialization=True)
    tok.save_pretrained(out)


if __name__ == "__main__":
    main(*sys.argv[1:4])
