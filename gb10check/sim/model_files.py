"""The field report's model, as the files a Hugging Face cache holds: config.json and the safetensors index.

The figures are the seed's (Qwen3.8-Flash-Next: 48 layers, every 4th full attention, 2 KV heads of
256, 36 Gated DeltaNet layers with 48 value heads of 128x128; checkpoints of 335.28 GiB in BF16 and
172.78 GiB in FP8). The simulated nodes hold these files with sparse shards of the real sizes.
"""

GIB = 2**30
REPO_FP8 = "Qwen/Qwen3.8-Flash-Next-FP8"
REPO_BF16 = "Qwen/Qwen3.8-Flash-Next"
TOTAL_BYTES = {REPO_BF16: int(335.28 * GIB), REPO_FP8: int(172.78 * GIB)}
SHARDS = 8


def config(repo: str) -> dict:
    cfg = {
        "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "torch_dtype": "bfloat16",
        "num_hidden_layers": 48, "full_attention_interval": 4, "num_attention_heads": 16, "num_key_value_heads": 2,
        "head_dim": 256, "hidden_size": 2048, "linear_num_value_heads": 48, "linear_num_key_heads": 16,
        "linear_key_head_dim": 128, "linear_value_head_dim": 128, "ngram_vocab_size_base": 20000000,
        "max_position_embeddings": 262144,
    }
    if repo.endswith("FP8"):
        cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic"}
    return cfg


def shard_names() -> list[str]:
    return [f"model-{i + 1:05d}-of-{SHARDS:05d}.safetensors" for i in range(SHARDS)]


def shard_sizes(repo: str) -> list[int]:
    total = TOTAL_BYTES[repo]
    return [total // SHARDS + (total % SHARDS if i == SHARDS - 1 else 0) for i in range(SHARDS)]


def index(repo: str) -> dict:
    names = shard_names()
    weight_map = {f"model.layers.{layer}.mlp.experts.weight": names[layer * SHARDS // 48] for layer in range(48)}
    return {"metadata": {"total_size": TOTAL_BYTES[repo]}, "weight_map": weight_map}


def cache_files(hf_cache: str, repo: str, revision: str = "0123456789abcdef0123456789abcdef01234567") -> list[dict]:
    """A Hugging Face hub cache entry: blobs, refs/main and a snapshot of links into blobs (sparse shards)."""
    import hashlib
    import json

    base = f"{hf_cache}/hub/models--{repo.replace('/', '--')}"
    files = [{"path": f"{base}/refs/main", "content": revision}]
    small = {"config.json": json.dumps(config(repo), indent=2), "model.safetensors.index.json": json.dumps(index(repo), indent=2)}
    entries = [(name, {"content": text}, hashlib.sha256(text.encode()).hexdigest()) for name, text in small.items()]
    entries += [(name, {"size": size}, hashlib.sha256(f"{repo}/{name}".encode()).hexdigest())
                for name, size in zip(shard_names(), shard_sizes(repo))]
    for name, body, blob in entries:
        files.append({"path": f"{base}/blobs/{blob}", **body})
        files.append({"path": f"{base}/snapshots/{revision}/{name}", "link": f"../../blobs/{blob}"})
    return files
