"""Host identity and driver: same user, same OS image and kernel, GPU name, driver parity."""

import re
from typing import TYPE_CHECKING

from ..facts import nvidia
from ..facts._text import ParseError
from ..remedies import Code
from ..verdict import Finding

if TYPE_CHECKING:
    from ..remote import NodeUnreachable


def os_release(text: str) -> str:
    """One line naming the image: DGX OS release when /etc/dgx-release is there, else os-release."""
    fields = dict(re.findall(r'^([A-Z_]+)="?(.*?)"?\s*$', text, re.M))
    if "DGX_SWBUILD_VERSION" in fields or "DGX_OTA_VERSION" in fields:
        return f"DGX OS {fields.get('DGX_OTA_VERSION') or fields.get('DGX_SWBUILD_VERSION')}"
    return fields.get("PRETTY_NAME") or fields.get("VERSION_ID") or text.strip().splitlines()[0] if text.strip() else "unknown"


def judge_parity(node: str, head: str, mine: dict[str, str], heads: dict[str, str]) -> list[Finding]:
    return [Finding(Code.OS_PARITY, node, f"{what} {mine[what]!r}", f"{heads[what]!r} as on {head}", head=head)
            for what in heads if mine.get(what) != heads[what]]


def judge_driver(node: str, proc_version: str, smi_query: str) -> list[Finding]:
    """Loaded kernel module (/proc/driver/nvidia/version) == user-mode driver (nvidia-smi)."""
    mismatch = nvidia.nvml_mismatch(smi_query)
    try:
        module = nvidia.parse_proc_version(proc_version).version
    except ParseError:
        module = None
    if mismatch:
        return [Finding(Code.NVML_MISMATCH, node, f"nvidia-smi: 'Driver/library version mismatch' (NVML library "
                        f"{mismatch.library_version or '?'}, kernel module {module or '?'})",
                        "the loaded kernel module to match the installed user-mode driver")]
    if module is None:
        return [Finding(Code.NO_DRIVER, node, f"/proc/driver/nvidia/version: {proc_version.strip()[:80] or 'missing'}",
                        "an NVIDIA kernel module version")]
    try:
        user = nvidia.parse_query(smi_query, ["driver_version"])[0]["driver_version"]
    except ParseError as exc:
        if (failed := nvidia.smi_failure(smi_query)):  # nvidia-smi answered with its error, not a version
            return [Finding(Code.NO_DRIVER, node, f"kernel module {module} loaded, but nvidia-smi answers {failed[:120]!r}",
                            "the user-mode driver's version from nvidia-smi")]
        return [Finding(Code.GARBLED, node, str(exc), "nvidia-smi --query-gpu=driver_version output",
                        command="nvidia-smi --query-gpu=driver_version --format=csv,noheader", kind="nvidia_smi_query")]
    if not _is_version(user):  # nvidia-smi answered with an error line, not a version
        return [Finding(Code.NO_DRIVER, node, f"kernel module {module} loaded, but nvidia-smi answers {str(user)[:120]!r}",
                        "the user-mode driver's version from nvidia-smi")]
    if user != module:
        return [Finding(Code.DRIVER_MISMATCH, node, f"kernel module {module}", f"user-mode driver {user} (nvidia-smi)")]
    return []


def installed_driver(smi_query: str) -> str | None:
    """The user-mode driver version: nvidia-smi's answer, or the NVML library version its mismatch error names."""
    mismatch = nvidia.nvml_mismatch(smi_query)
    if mismatch:
        return mismatch.library_version
    try:
        version = nvidia.parse_query(smi_query, ["driver_version"])[0]["driver_version"]
    except ParseError:
        return None
    return version if _is_version(version) else None


def _is_version(text) -> bool:
    return isinstance(text, str) and re.fullmatch(r"\d+(\.\d+)+", text.strip()) is not None


def judge_ssh_user(node: str, user: str, seen: str | None, unreachable: "NodeUnreachable | None") -> list[Finding]:
    """The node answers over SSH as the cluster's user (the one check that fails for a node that cannot be reached, with the
    code of the way it failed: remote.NodeUnreachable's kinds, remedies.REACH)."""
    if unreachable is not None:
        return [Finding(unreachable.code, node, str(unreachable), f"an SSH session as {user}", **{"user": user, **unreachable.params})]
    return [Finding(Code.SSH_USER, node, f"logged in as {seen!r}", f"user {user!r}", user=user)] if seen != user else []


def judge_gpu_name(node: str, names: list, expected: str) -> list[Finding]:
    return [] if names and all(n == expected for n in names) else \
        [Finding(Code.GPU_NAME, node, f"GPU {', '.join(map(str, names)) or 'none'}", expected)]


def judge_driver_same(node: str, head: str, mine: str | None, heads: str | None) -> list[Finding]:
    """The installed (user-mode) driver equals rank 0's: a node waiting for its reboot still has the right one installed."""
    missing = [(n, q) for n, q in ((node, mine), (head, heads)) if q is None]
    if missing:
        return [Finding(Code.NO_DRIVER, n, "nvidia-smi reports no driver version (see test_driver_parity)",
                        "an installed NVIDIA driver", node=n) for n, _ in missing]
    return [] if mine == heads else [Finding(Code.DRIVER_DIFFERS, node, f"driver {mine}", f"driver {heads} as on {head}", head=head)]


def judge_clock(node: str, skew_s: float, max_skew_s: float, uncertainty_s: float) -> list[Finding]:
    """Clock offset from the runner's, allowing the measurement's own uncertainty (half the round trip)."""
    return [] if abs(skew_s) <= max_skew_s + uncertainty_s else \
        [Finding(Code.CLOCK_SKEW, node, f"clock {skew_s:+.2f} s from the runner's", f"within {max_skew_s} s")]


def judge_driver_profile(node: str, installed: str | None, expected: str) -> list[Finding]:
    """The installed (user-mode) driver is the one the profile names (expect.driver_version)."""
    if installed is None:
        return [Finding(Code.NO_DRIVER, node, "nvidia-smi reports no driver version (see test_driver_parity)",
                        f"driver {expected} (expect.driver_version)")]
    return [] if installed == expected else \
        [Finding(Code.DRIVER_PROFILE, node, f"driver {installed}", f"driver {expected} (expect.driver_version)", version=expected)]
