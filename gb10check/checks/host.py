"""Host identity and driver: same user, same OS image and kernel, GPU name, driver parity."""

import re

from ..facts import nvidia
from ..facts._text import ParseError
from ..remedies import Code
from ..verdict import Finding


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
        return [Finding(Code.GARBLED, node, str(exc), "nvidia-smi --query-gpu=driver_version output",
                        command="nvidia-smi --query-gpu=driver_version --format=csv,noheader")]
    if user != module:
        return [Finding(Code.DRIVER_MISMATCH, node, f"kernel module {module}", f"user-mode driver {user} (nvidia-smi)")]
    return []


def installed_driver(smi_query: str) -> str | None:
    """The user-mode driver version: nvidia-smi's answer, or the NVML library version its mismatch error names."""
    mismatch = nvidia.nvml_mismatch(smi_query)
    if mismatch:
        return mismatch.library_version
    try:
        return nvidia.parse_query(smi_query, ["driver_version"])[0]["driver_version"]
    except ParseError:
        return None
