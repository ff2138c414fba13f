"""The command line as a new user meets it: --version, a tool's own spelling of a parse kind, and `size --model`
reading the Hugging Face cache (or saying in one line which files it needs and where it looked)."""

import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import gb10check
from gb10check import cli, facts
from gb10check.sim import model_files

REPO = Path(__file__).resolve().parent.parent
CAPTURE = REPO / "selftests" / "captures" / "nvidia_smi" / "h200-nvidia-smi.txt"
SIZE = ["--tp", "2", "--max-model-len", "262144", "--container-limit", "105G", "--json"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """The command in this process, its output captured."""
    args = cli.build_parser().parse_args(argv)
    code = args.func(args)
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- --version ----------------------------------------------------------------------------------------------------

def test_version_is_pyprojects(capsys):
    with pytest.raises(SystemExit) as done:
        cli.build_parser().parse_args(["--version"])
    assert done.value.code == 0
    expected = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out == f"gb10check {expected}\n"
    assert gb10check.__version__ == expected
    shown = subprocess.run([sys.executable, "-m", "gb10check", "--version"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert (shown.returncode, shown.stdout) == (0, f"gb10check {expected}\n"), shown.stderr


def test_version_outside_a_clone_is_the_installed_metadata(tmp_path):
    (tmp_path / "gb10check").mkdir()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "another"\nversion = "9.9"\n')  # not ours: not read
    assert gb10check.version(tmp_path / "gb10check") == importlib.metadata.version("gb10check")


def test_main_in_process_leaves_the_signal_dispositions_alone(capsys):
    # a test worker whose SIGPIPE is reset dies on its next write to a closed socket
    before = signal.getsignal(signal.SIGPIPE)
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert cli.main(["parse", "--list"]) == 0
    capsys.readouterr()
    assert signal.getsignal(signal.SIGPIPE) == before == signal.SIG_IGN


def test_the_command_whose_reader_has_gone_ends_quietly():
    # the pipe's read end is closed before the command writes: its first write meets a closed pipe, as under `| head`
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        shown = subprocess.run([sys.executable, "-m", "gb10check", "parse", "--list"], cwd=REPO, stdout=write_end,
                               stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (shown.returncode, shown.stderr) == (-signal.SIGPIPE, ""), shown.stderr


# ---- parse: kinds spelled as the tools are ----------------------------------------------------------------------

def test_a_dash_stands_for_an_underscore(capsys):
    code, dashed, err = run(capsys, "parse", "nvidia-smi", str(CAPTURE))
    assert code == 0 and err == ""
    assert run(capsys, "parse", "nvidia_smi", str(CAPTURE)) == (0, dashed, "")
    assert json.loads(dashed)["driver_version"] == "580.159.04"
    assert run(capsys, "parse", "nvidia-smi-query", str(REPO / "selftests/captures/nvidia_smi/h200-query-gpu-csv.txt"))[0] == 0


def test_an_unknown_kind_names_the_closest(capsys):
    code, out, err = run(capsys, "parse", "nvidia-sm", str(CAPTURE))
    assert (code, out) == (2, "")
    assert err == "gb10check parse: unknown kind 'nvidia-sm' (did you mean nvidia_smi?); `gb10check parse --list` shows the kinds\n"


def test_the_list_still_names_the_kinds_with_underscores(capsys):
    code, out, _ = run(capsys, "parse", "--list")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == list(facts.KINDS)


# ---- size --model: the Hugging Face cache ------------------------------------------------------------------------

def cache_entry(hub: Path, repo: str, revision: str, files: dict[str, dict], main: bool = True) -> Path:
    """A hub cache entry as huggingface_hub lays it out: blobs, snapshots/REV/NAME linked into them, refs/main."""
    entry = hub / f"models--{repo.replace('/', '--')}"
    snap = entry / "snapshots" / revision
    snap.mkdir(parents=True)
    (entry / "blobs").mkdir(exist_ok=True)
    for name, body in files.items():
        blob = entry / "blobs" / f"{revision}-{name}"
        blob.write_text(json.dumps(body))
        (snap / name).symlink_to(os.path.relpath(blob, snap))
    if main:
        (entry / "refs").mkdir(exist_ok=True)
        (entry / "refs" / "main").write_text(revision)
    return snap


def both(repo: str) -> dict:
    return {"config.json": model_files.config(repo), "model.safetensors.index.json": model_files.index(repo)}


def test_size_reads_the_model_from_the_cache_as_from_the_files(capsys, tmp_path):
    repo = model_files.REPO_FP8
    snap = cache_entry(tmp_path / "hf" / "hub", repo, "a" * 40, both(repo))
    by_files = run(capsys, "size", "--config", str(snap / "config.json"), "--index", str(snap / "model.safetensors.index.json"),
                   *SIZE)
    by_model = run(capsys, "size", "--model", repo, "--hf-cache", str(tmp_path / "hf"), *SIZE)
    assert by_model == by_files and by_model[0] == 0
    assert json.loads(by_model[1])["weights_gib"] == pytest.approx(172.78, abs=0.01)


def test_size_gives_the_decode_floor_of_the_profile(capsys, tmp_path):
    repo = model_files.REPO_FP8
    cache_entry(tmp_path / "hf" / "hub", repo, "e" * 40, both(repo))
    got = json.loads(run(capsys, "size", repo, "--hf-cache", str(tmp_path / "hf"), *SIZE)[1])
    assert round(got["decode_floor_tok_s"], 2) == 1.25 and got["decode_floor"].startswith("232 GB/s x 0.5 / 92.76 GB")
    got = json.loads(run(capsys, "size", repo, "--hf-cache", str(tmp_path / "hf"), "--profile", "h200", *SIZE)[1])
    assert round(got["decode_floor_tok_s"], 1) == 25.9  # 4800 GB/s x 0.5 / 92.76 GB
    got = json.loads(run(capsys, "size", repo, "--hf-cache", str(tmp_path / "hf"), "--profile", "sim", *SIZE)[1])
    assert got["decode_floor_tok_s"] is None and "profile sim gives no expect.memory_bandwidth_gbs" in got["decode_floor"]
    rc, out, err = run(capsys, "size", repo, "--hf-cache", str(tmp_path / "hf"), "--profile", "nosuch", *SIZE)
    assert rc == 2 and "'nosuch' is not a known profile" in err


def test_size_takes_the_model_id_as_its_argument(capsys, tmp_path):
    repo = model_files.REPO_FP8
    cache_entry(tmp_path / "hf" / "hub", repo, "d" * 40, both(repo))
    by_option = run(capsys, "size", "--model", repo, "--hf-cache", str(tmp_path / "hf"), *SIZE)
    assert run(capsys, "size", repo, "--hf-cache", str(tmp_path / "hf"), *SIZE) == by_option and by_option[0] == 0
    assert run(capsys, "size", repo, "--model", "org/other", *SIZE) == (
        2, "", f"gb10check size: two models named ({repo} and --model org/other): name one\n")


def test_size_finds_the_cache_through_hf_home(capsys, tmp_path, monkeypatch):
    repo = model_files.REPO_BF16
    cache_entry(tmp_path / "home" / "hub", repo, "b" * 40, both(repo))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    code, out, err = run(capsys, "size", "--model", repo, *SIZE)
    assert code == 1 and err == "" and json.loads(out)["weights_gib"] == pytest.approx(335.28, abs=0.01)  # BF16: no fit


def test_size_takes_the_snapshot_refs_main_names(capsys, tmp_path):
    hub = tmp_path / "hub"
    cache_entry(hub, "org/m", "1" * 40, both(model_files.REPO_FP8))
    newer = cache_entry(hub, "org/m", "2" * 40, both(model_files.REPO_BF16), main=False)
    os.utime(newer, (newer.stat().st_mtime + 60,) * 2)
    code, out, _ = run(capsys, "size", "--model", "org/m", "--hf-cache", str(hub), *SIZE)  # DIR may be the hub itself
    assert code == 0 and json.loads(out)["weights_gib"] == pytest.approx(172.78, abs=0.01)


def test_size_without_the_files_says_which_and_where(capsys, tmp_path):
    code, out, err = run(capsys, "size", "--model", "Qwen/Qwen3-32B", "--hf-cache", str(tmp_path), *SIZE)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err == (f"gb10check size: --model Qwen/Qwen3-32B needs config.json and model.safetensors.index.json from the "
                   f"Hugging Face cache: not in {tmp_path}/hub/models--Qwen--Qwen3-32B/snapshots/*/ or "
                   f"{tmp_path}/models--Qwen--Qwen3-32B/snapshots/*/; nothing is downloaded: `hf download Qwen/Qwen3-32B "
                   f"config.json model.safetensors.index.json` puts them there, or give --config and --index\n")


def test_size_names_the_one_file_a_snapshot_lacks(capsys, tmp_path):
    snap = cache_entry(tmp_path / "hub", "org/single", "c" * 40, {"config.json": model_files.config(model_files.REPO_FP8)})
    code, _, err = run(capsys, "size", "--model", "org/single", "--hf-cache", str(tmp_path), *SIZE)
    assert code == 2 and f"{snap} has config.json but not model.safetensors.index.json; " in err and "give --index\n" in err
    index = tmp_path / "index.json"
    index.write_text(json.dumps(model_files.index(model_files.REPO_FP8)))
    assert run(capsys, "size", "--model", "org/single", "--hf-cache", str(tmp_path), "--index", str(index), *SIZE)[0] == 0


@pytest.mark.parametrize(("argv", "message"), [
    ([], "give --model ORG/NAME (its files from the Hugging Face cache), or both --config and --index"),
    (["--config", "c.json"], "give --model ORG/NAME (its files from the Hugging Face cache), or both --config and --index"),
    (["--model", "Qwen3-32B"], "--model 'Qwen3-32B': expected a Hugging Face model id, ORG/NAME (e.g. Qwen/Qwen3-32B)"),
])
def test_size_asks_for_a_model_or_its_files(capsys, argv, message):
    assert run(capsys, "size", *argv, *SIZE) == (2, "", f"gb10check size: {message}\n")
