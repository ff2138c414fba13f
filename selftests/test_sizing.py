"""Unified-memory fit against the field report's own numbers."""

import json
import subprocess
import sys

import pytest

from gb10check.sim import model_files
from gb10check.sizing import SizingError, fit, shape_from_config


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
