"""How each fact's output is read: the parser it goes through and which exits and outputs are answers. A reader returns
the fact's value or raises Unreadable (or the parsers' ParseError) with why; text it cannot place is never read as a
valid-looking answer."""

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from .. import compose as stack
from .. import facts
from ..checks import model, platform
from ..checks.host import os_release
from ..remedies import Code
from .batch import Output, Unreadable

def parser(kind: str) -> Callable[[Output], Any]:
    return lambda out: facts.parse(kind, out.stdout)


def stripped(out: Output) -> str:
    return out.stdout.strip()


def matching(kind: str, pattern: str, what: str) -> Callable[[Output], str]:
    """The output's text, stripped, when every line matches `pattern`; else garbled."""
    rule = re.compile(pattern)

    def read(out: Output) -> str:
        lines = out.stdout.strip().splitlines()
        if not lines or not all(rule.fullmatch(line.strip()) for line in lines):
            raise facts.ParseError(kind, what, out.stdout)
        return out.stdout.strip()

    return read


def cmdline(out: Output) -> str:
    """/proc/cmdline: one line of boot parameters, some of them KEY=value."""
    text = out.stdout.strip()
    if "\n" in text or not any("=" in token for token in text.split()):
        raise facts.ParseError("/proc/cmdline", "one line of boot parameters (root=... quiet ...)", out.stdout)
    return text


def os_image(out: Output) -> str:
    """os-release's (or dgx-release's) KEY=value lines, named by host.os_release."""
    if not re.search(r'^[A-Z_]+=', out.stdout, re.M):
        raise facts.ParseError("os-release", "KEY=value lines (PRETTY_NAME=..., DGX_OTA_VERSION=...)", out.stdout)
    return os_release(out.stdout)


def docker_version(out: Output) -> tuple[int, str]:
    """(exit, what docker said): its errors are facts for the judge; a success must print a version."""
    if out.rc == 0 and not re.fullmatch(r"\d+\.\d+\S*", out.stdout.strip()):
        raise facts.ParseError("docker version", "the server's version (e.g. 28.3.3)", out.stdout)
    return out.rc, out.stdout + out.stderr


def docker_ps(out: Output) -> str:
    facts.docker.parse_ps(out.stdout)  # refuses a line that is not NAME<TAB>IMAGE<TAB>STATE<TAB>STATUS
    return out.stdout


def docker_stats(out: Output) -> str:
    if any(line.strip() and line.count("\t") != 1 for line in out.stdout.splitlines()):
        raise facts.ParseError("docker stats", "NAME<TAB>MEM USAGE lines (docker stats --format ...)", out.stdout)
    return out.stdout


def live_chain(out: Output) -> str:
    """`iptables -S ufw-user-input`: its rules; empty when the chain does not exist (ufw inactive)."""
    if out.rc == 1 and re.search(r"No chain/target/match|chain .* does not exist", out.stderr, re.I):
        return ""
    if out.rc != 0:
        raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")
    return matching("iptables -S", r"-[NAP] \S+.*", "-N/-A/-P rule lines")(out)


def both(out: Output) -> str:
    """stdout and stderr together: for outputs whose errors are facts too (nvidia-smi's NVML mismatch)."""
    return out.stdout + out.stderr


def file_or_absent(out: Output) -> str | None:
    """A file's text; None when it does not exist (its absence is a fact); any other error is unreadable."""
    if out.rc == 0:
        return out.stdout
    if "No such file" in out.stderr:
        return None
    raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")


def json_file_or_absent(out: Output) -> str | None:
    """A JSON file's text (checked to be JSON); None when it does not exist."""
    text = file_or_absent(out)
    if text is not None:
        try:
            json.loads(text)
        except ValueError:
            raise facts.ParseError(out.command, "a JSON document", text) from None
    return text


def json_list(out: Output) -> list:
    try:
        got = json.loads(out.stdout)
    except ValueError:
        raise facts.ParseError(out.command, "JSON", out.stdout) from None
    if not isinstance(got, list):
        raise facts.ParseError(out.command, "a JSON list", out.stdout)
    return got


def gpu_names(out: Output) -> list:
    if (facts.nvidia.nvml_mismatch(out.stdout + out.stderr)):
        raise Unreadable("nvidia-smi cannot ask the GPU: NVML driver/library version mismatch (test_driver_parity fails for it)",
                         Code.PREREQUISITE, check="test_driver_parity")
    if out.rc != 0:
        raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")
    return [r.get("name") for r in facts.parse("nvidia_smi_query", out.stdout)]


def gpu_list(out: Output) -> str:
    if out.rc != 0:
        raise Unreadable(f"nvidia-smi fails on the host itself ({last_line(out)}): a container cannot do better",
                         Code.PREREQUISITE, check="test_driver_parity")
    return matching("nvidia-smi -L", r"GPU \d+: .*|\s*MIG .*", "`GPU N: NAME (UUID: ...)` lines")(out)


def installed_driver(smi_query: str) -> str:
    """The user-mode driver's version from nvidia-smi's answer; the driver's own check says why there is none."""
    from ..checks.host import installed_driver as version

    found = version(smi_query)
    if found is None:
        raise Unreadable("nvidia-smi reports no driver version", Code.PREREQUISITE, check="test_driver_parity")
    return found


def loaded_driver(proc_version: str, smi_query: str) -> str:
    """The loaded kernel module's version (/proc/driver/nvidia/version), once it is the installed user-mode driver's: a
    module left behind by an upgrade (a reboot pending) is test_driver_parity's to report, not a stale CDI spec."""
    from ..checks.host import installed_driver as version

    try:
        module = facts.nvidia.parse_proc_version(proc_version).version
    except facts.ParseError:
        raise Unreadable("no NVIDIA kernel module version in /proc/driver/nvidia/version", Code.PREREQUISITE,
                         check="test_driver_parity") from None
    installed = None if facts.nvidia.nvml_mismatch(smi_query) else version(smi_query)
    if installed != module:
        raise Unreadable(f"the loaded kernel module {module} is not the installed user-mode driver ({installed or 'unknown'})",
                         Code.PREREQUISITE, check="test_driver_parity")
    return module


@dataclass(frozen=True)
class Image:
    """The deployment image on a node: its facts, or None with docker's words when it is not there."""

    info: Any
    missing: str = ""


def image(out: Output) -> Image:
    if out.rc == 0:
        return Image(facts.parse("docker_image_inspect", out.stdout))
    said = out.stdout + out.stderr
    if "No such image" in said or "No such object" in said:
        return Image(None, out.stderr)
    raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")


def image_present(img: Image) -> Image:
    if img.info is None:
        raise Unreadable("the deployment image is not on the node", Code.PREREQUISITE, check="test_image")
    return img


def sizing_files(config: str | None, index: str | None) -> tuple[str, str]:
    if config is None or index is None:
        raise Unreadable(f"no {'config.json' if config is None else 'model.safetensors.index.json'} of the model to size it by",
                         Code.PREREQUISITE, check="test_model_artifacts")
    return config, index


def compose_config(text: str | None) -> dict:
    if text is None:
        raise Unreadable("no compose file on the node", Code.PREREQUISITE, check="test_compose_lint")
    return facts.parse("compose_config", text)


def env_vars(env: str | None) -> dict[str, str]:
    if env is None:
        raise Unreadable("no .env on the node", Code.PREREQUISITE, check="test_compose_lint")
    odd = [line for line in env.splitlines() if line.strip() and not line.strip().startswith("#") and "=" not in line]
    if odd:
        raise facts.ParseError(".env", "KEY=value lines and comments", "\n".join(odd))
    return stack.parse_env(env)


def vllm_service(config: dict, env: dict[str, str]) -> tuple[str, dict]:
    """(name, the service interpolated with the node's .env) of the compose file's vllm service."""
    if not env:
        raise Unreadable("the .env sets no variable to interpolate the compose file with", Code.PREREQUISITE,
                         check="test_env_file")
    found = stack.vllm_service(config)
    if found is None:
        raise Unreadable("no vllm service in the compose file", Code.PREREQUISITE, check="test_compose_lint")
    return found[0], stack.interpolate(found[1], env)


def docker_usable(server: tuple[int, str]) -> bool:
    rc, said = server
    if rc != 0:
        lines = said.strip().splitlines()
        raise Unreadable(f"docker is not usable ({lines[-1][:200] if lines else f'exit {rc}'})", Code.PREREQUISITE,
                         check="test_container_runtime")
    return True


def ib_sysfs(out: Output):
    if out.rc == 2 and not out.stdout.strip():
        raise Unreadable("no RDMA device under /sys/class/infiniband (no RDMA driver loaded, or no RDMA NIC)", Code.NO_RDMA)
    if out.rc != 0:
        raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")
    return facts.parse("ib_sysfs", out.stdout)


def rdma_counters(out: Output):
    counters = platform.read_counters(out.stdout)
    if not counters:
        raise Unreadable("no error counters under /sys/class/infiniband/*/ports/*/counters", Code.NO_RDMA)
    return counters


def kernel_log(out: Output):
    log = facts.parse("kernel_log", out.stdout)
    if log.source == "none":
        raise Unreadable("neither journalctl -k -b nor dmesg could be read")
    return log


def lspci(out: Output):
    if not out.stdout.strip():
        raise Unreadable("lspci lists no Mellanox PCI function (no ConnectX card seen on the PCI bus)", Code.NO_RDMA)
    functions = facts.parse("lspci", out.stdout)
    if not any(f.is_connectx7 for f in functions):
        raise Unreadable("no ConnectX-7 (MT2910, 15b3:1021) among the Mellanox PCI functions", Code.NO_RDMA)
    return functions


def driver_packages(out: Output) -> list:
    """dpkg-query's rows for the patterns; a pattern that matches nothing makes it exit 1 beside the rows of the others."""
    if out.rc not in (0, 1) or (out.rc == 1 and "no packages found" not in out.stderr):
        raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")
    if out.rc == 0 and not out.stdout.strip():  # every pattern matched: rows must follow
        raise facts.ParseError("dpkg-query", "a row for each pattern that matched", out.stdout)
    return facts.parse("dpkg_query", out.stdout) if out.stdout.strip() else []


def unattended(out: Output):
    """apt's Unattended-Upgrade settings; None when there are none (apt-config prints none, and there is no
    50unattended-upgrades: unattended-upgrades is not installed)."""
    if out.rc == 1 and "No such file" in out.stderr:
        return None
    if out.rc != 0:
        raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")
    return facts.parse("unattended_upgrades", out.stdout) if out.stdout.strip() else None


def route_dev(out: Output) -> tuple[str | None, str]:
    """(the device the kernel routes through, the kernel's error): `ip route get`'s refusal is an answer too."""
    if out.rc == 0:
        routes = json_list(out)
        if not routes:
            raise facts.ParseError(out.command, "one route", out.stdout)
        return routes[0].get("dev"), ""
    return None, out.stderr.strip()


def listing(out: Output):
    """The model's cache listing (`f MODE SIZE PATH` and `l PATH TARGET` lines); empty when its folder does not exist."""
    if out.rc != 0:
        if "can't cd" in out.stderr or "No such file" in out.stderr:
            return model.parse_listing("")
        raise Unreadable(f"`{out.command}` exited {out.rc}: {last_line(out)}")
    if any(line.strip() and not re.match(r"(f \d+ \d+|l) \./", line) for line in out.stdout.splitlines()):
        raise facts.ParseError("model listing", "`f MODE SIZE ./PATH` and `l ./PATH TARGET` lines (find -printf)", out.stdout)
    return model.parse_listing(out.stdout)


def reboot_flag(out: Output) -> str:
    """`present` and the packages that asked for the reboot, or `absent`."""
    first = out.stdout.strip().splitlines()[0].strip() if out.stdout.strip() else ""
    if first not in ("present", "absent"):
        raise facts.ParseError("reboot-required", "'present' or 'absent' first", out.stdout)
    return out.stdout


def integer(out: Output) -> int:
    try:
        return int(out.stdout.strip())
    except ValueError:
        raise facts.ParseError(out.command, "a number", out.stdout) from None


def runtime(out: Output) -> tuple[int, str]:
    return out.rc, out.stdout + out.stderr


def last_line(out: Output) -> str:
    detail = (out.stderr or out.stdout).strip().splitlines()
    return detail[-1][:300] if detail else "no output"


def procfs(kind: str) -> Callable[[Output], Any]:
    """The watch's own readings (facts/procfs.py): the boots, a rank's state."""
    parse = {"boots": facts.procfs.parse_boots, "rank_state": facts.procfs.parse_rank_state}[kind]
    return lambda out: parse(out.stdout)
