"""Unified-memory fit: will the model load on each GB10 without wedging it?

On GB10 the GPU's memory is the machine's memory (119 GiB usable): asking for more pages than
exist does not end in an OOM kill but in the driver spinning in nv_alloc_system_pages with a
kernel lock held until the machine is rebooted (seed: BF16 at 167.6 GiB per node). So the fit is
checked before loading:

  weights per rank   = checkpoint bytes (safetensors index total_size) / TP
  KV per token       = full-attention layers x KV heads x head_dim x 2 (K and V) x dtype bytes,
                       split over TP (KV heads divide over ranks; fewer heads than ranks replicate)
  recurrent state    = linear-attention layers x value heads x key dim x value dim x dtype bytes per
                       sequence (Gated DeltaNet / Mamba-style), split over TP, x max_num_seqs
  need per rank      = weights + KV of one max_model_len sequence + recurrent x max_num_seqs + overhead
  budget             = gpu_memory_utilization x node memory; also under the container's memory limit
"""

import json
from dataclasses import asdict, dataclass

GIB = 2**30
MIB = 2**20
KIB = 2**10
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "fp8": 1, "float8_e4m3fn": 1, "auto": 2}


class SizingError(ValueError):
    pass


@dataclass
class ModelShape:
    layers: int
    full_attention_layers: int
    linear_attention_layers: int
    kv_heads: int
    head_dim: int
    linear_value_heads: int
    linear_key_dim: int
    linear_value_dim: int


def shape_from_config(config: dict) -> ModelShape:
    """The parts of a Hugging Face config.json that decide memory, for dense, hybrid and multimodal models."""
    cfg = config.get("text_config", config)  # multimodal wrappers keep the LM under text_config
    try:
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv_heads = int(cfg.get("num_key_value_heads", heads))
        head_dim = int(cfg.get("head_dim") or int(cfg["hidden_size"]) // heads)
    except (KeyError, TypeError, ValueError) as exc:
        raise SizingError(f"config.json lacks {exc} (need num_hidden_layers, num_attention_heads, hidden_size or head_dim)") from None
    if "layer_types" in cfg:  # explicit per-layer list
        full = sum(1 for t in cfg["layer_types"] if "full" in t or t == "attention")
    elif cfg.get("full_attention_interval"):  # Qwen3-Next style: every Nth layer is full attention
        full = layers // int(cfg["full_attention_interval"])
    else:
        full = layers
    linear = layers - full
    return ModelShape(layers, full, linear, kv_heads, head_dim, int(cfg.get("linear_num_value_heads", 0) or 0),
                      int(cfg.get("linear_key_head_dim", 0) or 0), int(cfg.get("linear_value_head_dim", 0) or 0))


def checkpoint_bytes(index: dict) -> int:
    try:
        return int(index["metadata"]["total_size"])
    except (KeyError, TypeError, ValueError):
        raise SizingError("model.safetensors.index.json has no metadata.total_size") from None


@dataclass
class Fit:
    tp: int
    weights_gib: float
    weights_per_rank_gib: float
    kv_per_token_kib: float
    kv_per_token_per_rank_kib: float
    kv_one_sequence_gib: float
    recurrent_per_sequence_mib: float
    recurrent_per_sequence_per_rank_mib: float
    recurrent_total_gib: float
    overhead_gib: float
    need_gib: float
    budget_gib: float
    memory_gib: float
    container_limit_gib: float | None
    weights_exceed_memory: bool
    fits_budget: bool
    fits_container: bool

    @property
    def ok(self) -> bool:
        return self.fits_budget and self.fits_container and not self.weights_exceed_memory

    def table(self) -> str:
        rows = [
            ("weights (checkpoint)", f"{self.weights_gib:.2f} GiB"),
            (f"weights per rank (TP={self.tp})", f"{self.weights_per_rank_gib:.2f} GiB"),
            ("KV cache per token", f"{self.kv_per_token_kib:.0f} KiB ({self.kv_per_token_per_rank_kib:.0f} KiB per rank)"),
            ("KV for one max_model_len sequence", f"{self.kv_one_sequence_gib:.2f} GiB per rank"),
            ("recurrent state per sequence", f"{self.recurrent_per_sequence_mib:.0f} MiB ({self.recurrent_per_sequence_per_rank_mib:.0f} MiB per rank)"),
            ("recurrent state, all sequences", f"{self.recurrent_total_gib:.2f} GiB per rank"),
            ("overhead (activations, CUDA context)", f"{self.overhead_gib:.2f} GiB"),
            ("need per rank", f"{self.need_gib:.2f} GiB"),
            ("budget (gpu_memory_utilization x memory)", f"{self.budget_gib:.2f} GiB of {self.memory_gib:.0f} GiB"),
            ("container memory limit", f"{self.container_limit_gib:.0f} GiB" if self.container_limit_gib else "none"),
        ]
        width = max(len(r[0]) for r in rows)
        verdict = "fits" if self.ok else ("DOES NOT FIT: loading would exhaust unified memory and can wedge the driver"
                                          if self.weights_exceed_memory else "DOES NOT FIT")
        return "\n".join(f"{k:<{width}}  {v}" for k, v in rows) + f"\n{'verdict':<{width}}  {verdict}"

    def as_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def fit(config: dict, index: dict, tp: int, max_model_len: int, max_num_seqs: int, gpu_memory_utilization: float,
        memory_gib: float, container_limit_gib: float | None = None, kv_dtype: str = "bfloat16",
        state_dtype: str = "bfloat16", overhead_gib: float = 4.0) -> Fit:
    if tp < 1:
        raise SizingError("tensor parallel size must be at least 1")
    shape = shape_from_config(config)
    weights = checkpoint_bytes(index)
    kv_bytes = DTYPE_BYTES.get(kv_dtype, 2)
    kv_token = shape.full_attention_layers * shape.kv_heads * shape.head_dim * 2 * kv_bytes
    kv_token_rank = kv_token / min(tp, shape.kv_heads) if shape.kv_heads else kv_token
    recurrent = shape.linear_attention_layers * shape.linear_value_heads * shape.linear_key_dim * shape.linear_value_dim * \
        DTYPE_BYTES.get(state_dtype, 2)
    recurrent_rank = recurrent / tp
    kv_seq = kv_token_rank * max_model_len
    need = weights / tp + kv_seq + recurrent_rank * max_num_seqs + overhead_gib * GIB
    budget = gpu_memory_utilization * memory_gib * GIB
    return Fit(
        tp=tp, weights_gib=weights / GIB, weights_per_rank_gib=weights / tp / GIB, kv_per_token_kib=kv_token / KIB,
        kv_per_token_per_rank_kib=kv_token_rank / KIB, kv_one_sequence_gib=kv_seq / GIB, recurrent_per_sequence_mib=recurrent / MIB,
        recurrent_per_sequence_per_rank_mib=recurrent_rank / MIB, recurrent_total_gib=recurrent_rank * max_num_seqs / GIB,
        overhead_gib=overhead_gib, need_gib=need / GIB, budget_gib=budget / GIB, memory_gib=memory_gib,
        container_limit_gib=container_limit_gib, weights_exceed_memory=weights / tp > memory_gib * GIB,
        fits_budget=need <= budget, fits_container=container_limit_gib is None or need <= container_limit_gib * GIB,
    )


def load_json(path: str, what: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as exc:
        raise SizingError(f"cannot read {what} {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise SizingError(f"{what} {path} is not JSON: {exc.msg} at line {exc.lineno}") from None


# ---- decode floor: memory bandwidth over the bytes each node reads per token ----------------------------------------
#
# Decoding one token at a time reads every weight the token passes through once; at batch 1 nothing else is as large
# (the KV cache of a short request and the activations are megabytes against tens of GiB). So a node cannot decode
# faster than its memory bandwidth over the weight bytes it reads per token (the ceiling), and a healthy engine reaches
# the profile's share of that ceiling (the efficiency): the floor.
#
#   bytes per token per node = weights read per token / TP      (TP shards every matrix, experts included)
#   weights read per token   = the checkpoint (dense), or for a mixture of experts the checkpoint less the routed
#                              experts a token does not use: experts bytes x (1 - experts_per_tok / experts), the
#                              experts' bytes = MoE layers x experts x 3 (gate, up, down) x hidden x moe_intermediate x
#                              bytes per weight of the checkpoint's quantization (scales not counted: read slightly more)
#   floor tok/s              = bandwidth x efficiency / bytes per token per node

# Bytes per weight of a checkpoint's quantization (quantization_config.quant_method), or of its torch_dtype when unquantized.
# A method that can hold several widths (compressed-tensors, modelopt) says it with `bits`, or is not known.
QUANT_BYTES = {"fp8": 1.0, "fbgemm_fp8": 1.0, "nvfp4": 0.5, "modelopt_fp4": 0.5, "mxfp4": 0.5}
EXPERT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")


@dataclass
class DecodeBytes:
    tp: int
    checkpoint_bytes: int
    read_per_token_bytes: float  # all ranks together
    per_node_bytes: float
    how: str  # dense, or the MoE arithmetic, in words


def weight_bytes(config: dict) -> float:
    """Bytes per weight of the checkpoint: its quantization's, else its torch_dtype's; SizingError when unknown."""
    q = config.get("quantization_config") or (config.get("text_config") or {}).get("quantization_config")
    if q:
        method = str(q.get("quant_method", "")).lower()
        bits = q.get("bits")
        if isinstance(bits, int) and not isinstance(bits, bool) and bits in (2, 3, 4, 8):
            return bits / 8
        if method not in QUANT_BYTES:
            raise SizingError(f"quantization {method or '(unnamed)'!r}: its bytes per weight are not known to gb10check")
        return QUANT_BYTES[method]
    dtype = str((config.get("text_config") or config).get("torch_dtype") or config.get("torch_dtype") or "")
    if dtype not in DTYPE_BYTES or dtype == "auto":
        raise SizingError(f"torch_dtype {dtype or '(none)'!r}: cannot tell the bytes per weight")
    return float(DTYPE_BYTES[dtype])


def decode_bytes(config: dict, index: dict, tp: int) -> DecodeBytes:
    """The weight bytes each node reads to decode one token (see above); SizingError when the files cannot say."""
    if tp < 1:
        raise SizingError("tensor parallel size must be at least 1")
    total = checkpoint_bytes(index)
    if total <= 0:
        raise SizingError(f"model.safetensors.index.json says total_size {total}: no weights to read")
    cfg = config.get("text_config", config)
    experts = next((cfg[k] for k in EXPERT_KEYS if cfg.get(k)), None)
    if not experts:
        return DecodeBytes(tp, total, float(total), total / tp, f"dense: the whole checkpoint, {total / GIB:.2f} GiB, / TP {tp}")
    try:
        experts, active = int(experts), int(cfg["num_experts_per_tok"])
        hidden, inter = int(cfg["hidden_size"]), int(cfg["moe_intermediate_size"])
        layers = int(cfg["num_hidden_layers"])
        step = int(cfg.get("decoder_sparse_step") or 1)  # every step-th layer is MoE (Qwen2/3-MoE)
        dense_layers = set(cfg.get("mlp_only_layers") or []) | set(range(int(cfg.get("first_k_dense_replace") or 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise SizingError(f"config.json names {experts} experts but its MoE fields are missing or not numbers ({exc}): "
                          "need num_experts_per_tok, hidden_size, moe_intermediate_size, num_hidden_layers") from None
    moe_layers = sum(1 for i in range(layers) if i not in dense_layers and (i + 1) % step == 0)
    if not 0 < active <= experts:
        raise SizingError(f"config.json: num_experts_per_tok {active} with {experts} experts")
    expert_bytes = moe_layers * experts * 3 * hidden * inter * weight_bytes(config)
    if expert_bytes >= total:
        raise SizingError(f"config.json's experts come to {expert_bytes / GIB:.2f} GiB, more than the checkpoint's "
                          f"{total / GIB:.2f} GiB: the config does not describe these weights")
    read = total - expert_bytes * (1 - active / experts)
    how = (f"MoE: the checkpoint {total / GIB:.2f} GiB less the unused routed experts ({active} of {experts} per token, "
           f"experts {expert_bytes / GIB:.2f} GiB): {read / GIB:.2f} GiB, / TP {tp}")
    return DecodeBytes(tp, total, read, read / tp, how)


def decode_floor(weight_bytes_per_node: float, bandwidth_gbs: float, efficiency: float) -> float:
    """The tok/s a healthy node decodes at batch 1 at the least: bandwidth (GB/s, 10^9 bytes) over the bytes it reads per
    token (the ceiling), times the share of it a healthy engine reaches."""
    if weight_bytes_per_node <= 0 or bandwidth_gbs <= 0 or not 0 < efficiency <= 1:
        raise SizingError(f"cannot derive a decode floor from {weight_bytes_per_node} bytes per token, {bandwidth_gbs} GB/s "
                          f"and efficiency {efficiency}")
    return bandwidth_gbs * 1e9 * efficiency / weight_bytes_per_node
