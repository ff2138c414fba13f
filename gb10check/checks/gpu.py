"""GPU and image canaries: compute and clocks under a matmul (test_gpu_compute), a torch op and a Triton kernel in the
image (test_image_kernels), and the NCCL that torch in the image really loads (test_image_nccl). Facts in (the canary programs' JSON, nvidia-smi samples), findings out."""

import re
import statistics
from dataclasses import dataclass

from ..cluster import Expect, NcclPin
from ..remedies import Code
from ..verdict import Finding

# nvidia-smi clocks_event_reasons (formerly clocks_throttle_reasons) bits, as nvidia-smi -q names them.
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x10: "sync_boost",
           0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown",
           0x100: "display_clock_setting"}


def reason_names(mask: int) -> list[str]:
    return [name for bit, name in REASONS.items() if mask & bit] + ([f"0x{mask & ~0x1FF:x}"] if mask & ~0x1FF else [])


def _mask(row: dict) -> int | None:
    value = row.get("clocks_event_reasons_active")
    try:
        return int(str(value), 16) if value is not None else None
    except ValueError:
        return None


@dataclass
class Load:
    """GPU 0 while the matmul ran: the samples not marked idle (reason bit 0x1), summarised."""

    samples: int  # busy samples
    sm_clock_mhz: float | None  # median
    max_sm_clock_mhz: float | None
    power_w: float | None  # median
    temperature_c: float | None  # highest
    reasons: int  # union of the busy samples' reasons

    @property
    def reason_text(self) -> str:
        return ", ".join(reason_names(self.reasons)) or "none"


def load_of(rows: list[dict] | None) -> Load | None:
    busy = [r for r in rows or [] if (m := _mask(r)) is None or not m & 0x1]
    if not busy:
        return None

    def median(key):
        values = [r[key] for r in busy if isinstance(r.get(key), (int, float))]
        return statistics.median(values) if values else None

    temps = [r["temperature_gpu"] for r in busy if isinstance(r.get("temperature_gpu"), (int, float))]
    reasons = 0
    for r in busy:
        reasons |= _mask(r) or 0
    return Load(len(busy), median("clocks_current_sm_mhz"), median("clocks_max_sm_mhz"), median("power_draw_w"),
                max(temps) if temps else None, reasons)


def measured(result: dict, load: Load | None) -> list[tuple[str, float | str, str]]:
    """What the run prints per node: TFLOP/s, median SM clock, median power, and the clock-event reasons under load."""
    unit = f"TFLOP/s ({result.get('dtype')} on {result.get('device')})"
    out = [("matmul (median batch)", compute_rate(result), unit)]
    if load is not None:
        if load.sm_clock_mhz is not None:
            out.append(("SM clock under load (median)", load.sm_clock_mhz, f"MHz of {load.max_sm_clock_mhz or '?'}"))
        if load.power_w is not None:
            out.append(("GPU power under load (median)", load.power_w, "W"))
        out.append(("clock-event reasons under load", load.reason_text, f"(mask {load.reasons:#x})"))
    return out


def compute_rate(result: dict) -> float:
    """The timing program's figure to judge: the median batch's TFLOP/s (a burst of other work on the machine slows a few
    batches, not the median; a GPU stuck slow is slow in every batch), else the run's overall figure (older programs)."""
    return float(result.get("tflops_median") or result["tflops"])


def judge_compute(node: str, result: dict, rows: list[dict] | None, no_rows: str | None, expect: Expect,
                  fastest: tuple[str, float] | None) -> list[Finding]:
    """Below the TFLOP/s floor or the SM-clock floor under load, or slower than the fastest node by more than the ratio.

    The clock is judged on samples not marked idle, whatever ran the matmul (a CPU torch leaves the GPU idle, so there is
    nothing to judge, unless the GPU is busy anyway: another job, or the simulation's stand-in answering as a busy GPU);
    a CUDA run with no busy sample is a warning (we could not see the clock)."""
    findings = []
    tflops = compute_rate(result)
    what = f"{tflops:.4g} TFLOP/s ({result.get('dtype')} {result.get('n')}^3 matmul on {result.get('device')}, {result.get('backend')})"
    if tflops < expect.min_tflops:
        findings.append(Finding(Code.GPU_COMPUTE_LOW, node, what, f">= {expect.min_tflops:g} TFLOP/s (expect.min_tflops)"))
    load = load_of(rows)
    if load is None or load.sm_clock_mhz is None:
        if result.get("backend") == "cuda":
            findings.append(Finding(Code.GPU_NOT_SAMPLED, node, f"no nvidia-smi sample under load ({no_rows or 'only idle samples'})",
                                    "SM clock samples while the matmul ran", warning=True))
    elif load.sm_clock_mhz < expect.min_sm_clock_mhz:
        findings.append(Finding(Code.GPU_CLOCK_LOW, node, f"SM clock {load.sm_clock_mhz:g} MHz under load (median of "
                                f"{load.samples} samples, max {load.max_sm_clock_mhz or '?'} MHz), {load.power_w or '?'} W, "
                                f"reasons {load.reason_text}", f">= {expect.min_sm_clock_mhz:g} MHz (expect.min_sm_clock_mhz)",
                                reasons=load.reason_text))
    if fastest is not None and fastest[0] != node and tflops < fastest[1] * (1 - expect.max_compute_spread):
        slower = 1 - tflops / fastest[1]
        findings.append(Finding(Code.GPU_COMPUTE_SPREAD, node, f"{tflops:.4g} TFLOP/s, {slower:.0%} slower than {fastest[0]} "
                                f"({fastest[1]:.4g} TFLOP/s)", f"within {expect.max_compute_spread:.0%} of the fastest node "
                                "(expect.max_compute_spread)", fastest=fastest[0]))
    return findings


def nccl_text(ident: dict) -> str:
    if ident.get("static"):
        return f"NCCL {ident.get('version')} linked into torch (no libnccl file)"
    return f"NCCL {ident.get('version')} {ident.get('path')} build id {ident.get('build_id')}"


def pynccl_of(ident: dict) -> dict | None:
    """The library vLLM's own communicator (pynccl) loads, when the canary found one."""
    found = ident.get("pynccl")
    return found if isinstance(found, dict) and found.get("path") else None


def nccl_measured(ident: dict, runs_in: str) -> tuple[str, str, str]:
    """What the run prints of the NCCL torch loads: its version as text (2.28.9, never NCCL_VERSION_CODE's 22809), the
    library and where the variable NCCL_VERSION said otherwise or nothing."""
    where = "linked into torch" if ident.get("static") else f"{ident.get('path')} build id {ident.get('build_id')}"
    return ("NCCL torch loads", str(ident.get("version") or "?"),
            f"{where}; NCCL_VERSION={ident.get('env_nccl_version') or 'unset'} in {runs_in}")


def judge_nccl_identity(node: str, head: str, mine: dict, heads: dict, pin: NcclPin | None, image: str,
                        canary_python: str | None = None) -> list[Finding]:
    """The libnccl torch's calls reach: the same path, version and build id as on rank 0, and so the library vLLM's pynccl
    loads; the deploy.nccl pin when set; a warning when pynccl loads another library than torch (two builds in one
    process: an LD_PRELOAD or VLLM_NCCL_SO_PATH); and the image's NCCL_VERSION variable, when set, naming the library's
    version (else a warning: the variable lies). `canary_python`: the canary ran in that python on the node, not in the
    image (deploy.canary_python, a machine without docker): the variable is that environment's, and so is its fix."""
    findings = []
    if canary_python:
        holder = f"the environment deploy.canary_python ({canary_python}) runs in"
        unstale = (f"unset NCCL_VERSION, or set it to the loaded library's version, where {canary_python} runs on {node} "
                   "(the SSH user's environment: ~/.bashrc, /etc/environment, a container's ENV); the deployment image "
                   "is not what was read")
    else:
        holder = f"the image {image}"
        unstale = "rebuild the image with the variable set to the NCCL it ships, or drop it"
    if node != head:
        differs = [k for k in ("path", "version", "build_id") if mine.get(k) != heads.get(k)]
        if differs:
            findings.append(Finding(Code.IMAGE_NCCL_DIFFERS, node, f"{nccl_text(mine)} ({', '.join(differs)} differ)",
                                    f"{nccl_text(heads)} as on {head}", head=head, image=image))
        mine_py, heads_py = pynccl_of(mine), pynccl_of(heads)
        if mine_py and heads_py and not differs and (mine_py.get("version"), mine_py.get("build_id")) != \
                (heads_py.get("version"), heads_py.get("build_id")):
            findings.append(Finding(Code.IMAGE_NCCL_DIFFERS, node, f"vLLM's pynccl loads {nccl_text(mine_py)}",
                                    f"{nccl_text(heads_py)} as on {head}", head=head, image=image))
    py = pynccl_of(mine)
    if py and not mine.get("static") and py.get("build_id") != mine.get("build_id"):
        findings.append(Finding(Code.IMAGE_NCCL_SPLIT, node, f"torch's NCCL calls reach {nccl_text(mine)}; vLLM's pynccl "
                                f"({py.get('so_path')}) loads {nccl_text(py)}", "one NCCL library in the process",
                                warning=True))
    if pin is not None:
        wrong = [(k, mine.get(k), want) for k, want in (("version", pin.version), ("build_id", pin.build_id))
                 if want is not None and mine.get(k) != want]
        if wrong:
            findings.append(Finding(Code.IMAGE_NCCL_PIN, node, f"{nccl_text(mine)}",
                                    "; ".join(f"{k} {want} (deploy.nccl)" for k, _, want in wrong)))
    env = mine.get("env_nccl_version")
    if env and mine.get("version") and not (env == mine["version"] or env.startswith(mine["version"] + "-")
                                            or env.startswith(mine["version"] + "+")):
        findings.append(Finding(Code.IMAGE_NCCL_ENV_STALE, node, f"NCCL_VERSION={env} in {holder}, but torch loads "
                                f"{nccl_text(mine)}", f"NCCL_VERSION naming the loaded library ({mine['version']})", warning=True,
                                holder=holder, unstale=unstale))
    return findings


# ptxas refusing the GPU's architecture: "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'"; the tool
# is Triton's ptxas or ptxas-blackwell (what Triton 3.6.0 ran for sm_199a on our H200: selftests/captures/README.md)
PTXAS_ARCH = re.compile(r"((?P<tool>ptxas[\w-]*)\s+fatal\s*:\s*Value '(?P<arch>sm_\d+[a-z]?)' is not defined for option 'gpu-name')")


def ptxas_variable(tool: str) -> str:
    """The environment variable that points Triton at another binary for that tool, by Triton's rule (TRITON_, the
    name upper-cased with - as _, _PATH): TRITON_PTXAS_PATH for ptxas, TRITON_PTXAS_BLACKWELL_PATH for ptxas-blackwell,
    which Triton 3.6 runs for sm_100 and later (the GB10's sm_121a too), so TRITON_PTXAS_PATH alone does not reach it."""
    return f"TRITON_{tool.upper().replace('-', '_')}_PATH"


def compiler_message(error: str, limit: int = 400) -> str:
    """The compiler's own words from an exception text: the ptxas / nvcc / CUDA error line when there is one (Triton puts
    it under "`ptxas` stderr:"), else the exception's first line; the generated PTX and stack frames left out."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    first = lines[0] if lines else "no message"
    key = next((line for line in lines if re.search(r"\bfatal\b|error:|CUDA error|no kernel image", line, re.I) and line != first), None)
    text = f"{first} | {key}" if key else first
    return text if len(text) <= limit else text[:limit - 3] + "..."


def judge_image_kernels(node: str, result: dict, image: str, command: str) -> list[Finding]:
    """A torch op on the GPU and a Triton kernel compiled and run in the image (gb10check/canary/kernels.py's JSON):
    each failure carries the compiler's message; ptxas not knowing the GPU's architecture names its own fix."""
    findings = []
    where = f"{result.get('device') or 'the GPU'} ({result.get('capability') or '?'})"
    built = ", ".join(result.get("arch_list") or []) or "?"
    op = result.get("torch_op") or {}
    if not op.get("ok"):
        findings.append(Finding(Code.IMAGE_KERNELS, node, f"a torch op on {where} in {image} failed: "
                                f"{compiler_message(op.get('error') or 'no result')} (torch {result.get('torch')} built for {built})",
                                "the op to run on the GPU", capability=result.get("capability") or "?", command=command))
    tr = result.get("triton") or {}
    if not tr.get("ok"):
        error = tr.get("error") or "no result"
        m = PTXAS_ARCH.search(error)
        version = f"Triton {tr.get('version')}" if tr.get("version") else "Triton"
        if m:
            findings.append(Finding(Code.IMAGE_PTXAS_ARCH, node, f"{version} in {image} cannot compile for {where}: {m[1]}",
                                    f"a ptxas that knows {m['arch']}", arch=m["arch"], ptxas_env=ptxas_variable(m["tool"])))
        else:
            findings.append(Finding(Code.IMAGE_KERNELS, node, f"a {version} kernel on {where} in {image} failed: "
                                    f"{compiler_message(error)}", "the kernel to compile and run",
                                    capability=result.get("capability") or "?", command=command))
    return findings
