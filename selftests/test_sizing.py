"""Unified-memory fit against the field report's own numbers."""

import json
import subprocess
import sys

import pytest

from gb10check.sim import model_files
from gb10check.sizing import GIB, SizingError, decode_bytes, decode_floor, fit, shape_from_config


def seed_fit(repo, **kw):
    args = dict(tp=2, max_model_len=262144, max_num_seqs=8, gpu_memory_utilization=0.8, memory_gib=119, container_limit_gib=105)
    args.update(kw)
    return fit(model_files.config(repo), model_files.index(repo), **args)


def test_bf16_cannot_fit_and_says_it_would_wedge():
    f = seed_fit(model_files.REPO_BF16)
    assert round(f.weights_gib, 2) == 335.28 and round(f.weights_per_rank_gib, 1) == 167.6
    assert f.weights_exceed_memory and not f.ok
    assert "DOES NOT FIT: loading would exhaust unified memory and can wedge the driver" in f.table()


def test_fp8_fits_with_the_seeds_figures():
    f = seed_fit(model_files.REPO_FP8)
    assert round(f.weights_per_rank_gib, 1) == 86.4
    assert (f.kv_per_token_kib, f.kv_per_token_per_rank_kib) == (24, 12)
    assert f.kv_one_sequence_gib == 3.0
    assert (f.recurrent_per_sequence_mib, f.recurrent_per_sequence_per_rank_mib) == (54, 27)
    assert round(f.recurrent_total_gib * 1024) == 216
    assert f.ok and f.need_gib < f.budget_gib == pytest.approx(95.2)


def test_fp8_on_one_node_would_wedge_it():
    f = seed_fit(model_files.REPO_FP8, tp=1)
    assert f.weights_exceed_memory and not f.ok


def test_context_too_long_for_the_kv_budget():
    f = seed_fit(model_files.REPO_FP8, max_model_len=1048576)
    assert not f.weights_exceed_memory and not f.fits_budget and f.kv_one_sequence_gib == 12.0


def test_container_limit_below_need():
    assert not seed_fit(model_files.REPO_FP8, container_limit_gib=80).fits_container


def test_dense_model_without_hybrid_fields():
    shape = shape_from_config({"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096})
    assert (shape.full_attention_layers, shape.linear_attention_layers, shape.head_dim) == (32, 0, 128)


def test_incomplete_config_is_a_clear_error():
    with pytest.raises(SizingError, match="config.json lacks 'num_attention_heads'"):
        shape_from_config({"num_hidden_layers": 4})


def test_size_command(tmp_path):
    for repo, code in ((model_files.REPO_FP8, 0), (model_files.REPO_BF16, 1)):
        (tmp_path / "config.json").write_text(json.dumps(model_files.config(repo)))
        (tmp_path / "index.json").write_text(json.dumps(model_files.index(repo)))
        run = subprocess.run([sys.executable, "-m", "gb10check", "size", "--config", str(tmp_path / "config.json"), "--index",
                              str(tmp_path / "index.json"), "--tp", "2", "--max-model-len", "262144", "--container-limit", "105G"],
                             capture_output=True, text=True)
        assert run.returncode == code, run.stderr
        assert "weights per rank (TP=2)" in run.stdout and "KV cache per token" in run.stdout
    assert "wedge the driver" in run.stdout


# ---- decode floor -------------------------------------------------------------------------------------------------


def test_decode_floor_is_bandwidth_times_efficiency_over_bytes():
    # the seed's FP8 checkpoint over TP=2: 86.39 GiB a node; the GB10 figures, measured 231-234 and spec 273 GB/s
    per_node = decode_bytes(model_files.config(model_files.REPO_FP8), model_files.index(model_files.REPO_FP8), 2).per_node_bytes
    assert round(per_node / GIB, 2) == 86.39
    assert [round(decode_floor(per_node, bw, 1.0), 2) for bw in (231, 234, 273)] == [2.49, 2.52, 2.94]
    # the seed measured 22.62 (eager) and 23.32 tok/s: 9x the dense ceiling, so the checkpoint is a mixture of experts whose
    # config.json, as the suite holds it, names no experts: the dense floor is low, never wrong-side
    assert 22.62 / decode_floor(per_node, 232, 1.0) > 9
    with pytest.raises(SizingError):
        decode_floor(per_node, 232, 0)
    with pytest.raises(SizingError):
        decode_floor(0, 232, 0.5)


def moe_config(**over):
    cfg = {"num_hidden_layers": 4, "num_attention_heads": 4, "hidden_size": 1024, "num_experts": 8, "num_experts_per_tok": 2,
           "moe_intermediate_size": 512, "torch_dtype": "bfloat16", "quantization_config": {"quant_method": "fp8"}}
    return {**cfg, **over}


def test_moe_reads_only_the_active_experts():
    experts = 4 * 8 * 3 * 1024 * 512  # layers x experts x (gate, up, down) x hidden x moe_intermediate, 1 byte each (fp8)
    total = experts + 10 * 2**20
    d = decode_bytes(moe_config(), {"metadata": {"total_size": total}}, 2)
    assert d.read_per_token_bytes == total - experts * (1 - 2 / 8)
    assert d.per_node_bytes == d.read_per_token_bytes / 2 and d.how.startswith("MoE: the checkpoint")
    # every other layer MoE (decoder_sparse_step 2): half the experts' bytes
    assert decode_bytes(moe_config(decoder_sparse_step=2), {"metadata": {"total_size": total}}, 1).read_per_token_bytes == \
        total - experts / 2 * (1 - 2 / 8)
    # unquantized BF16: 2 bytes a weight; 4-bit by `bits`
    assert decode_bytes(moe_config(quantization_config=None), {"metadata": {"total_size": 3 * experts}}, 1).read_per_token_bytes \
        == 3 * experts - 2 * experts * (1 - 2 / 8)
    gptq = moe_config(quantization_config={"quant_method": "gptq", "bits": 4})
    assert decode_bytes(gptq, {"metadata": {"total_size": total}}, 1).read_per_token_bytes == total - experts / 2 * (1 - 2 / 8)


@pytest.mark.parametrize("config, index, message", [
    (moe_config(), {"metadata": {"total_size": 1000}}, "more than the checkpoint's"),
    (moe_config(num_experts_per_tok=9), {"metadata": {"total_size": 2**40}}, "num_experts_per_tok 9 with 8 experts"),
    (moe_config(quantization_config={"quant_method": "compressed-tensors"}), {"metadata": {"total_size": 2**40}},
     "'compressed-tensors': its bytes per weight are not known"),
    (moe_config(moe_intermediate_size="x"), {"metadata": {"total_size": 2**40}}, "MoE fields are missing or not numbers .invalid literal"),
    (moe_config(), {"metadata": {"total_size": 0}}, "total_size 0"),
    (moe_config(), {}, "no metadata.total_size"),
])
def test_moe_files_that_cannot_say_are_an_error(config, index, message):
    with pytest.raises(SizingError, match=message):
        decode_bytes(config, index, 2)
