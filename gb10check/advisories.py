"""Known-bad versions on GB10 clusters: one table of data, judged against each node's facts.

Each advisory names what it is, which versions it affects (a kernel release pattern, a kernel command-line
parameter whose absence matters, a BIOS date before which it applies, a driver version range, the NVIDIA
driver packages being open to unattended upgrades, or the NCCL the serving image's torch really loads: its version
range, its build and the node's architecture, a development build, an environment variable the serving container
lacks, the NVIDIA Container Toolkit's version and whether containers get the GPU through CDI), the symptom users see, the fix, and the public report it
comes from. Every criterion given must hold for a node to be affected; a fact the node did not give (no DMI
table, no driver) never makes it affected. `checks.platform.judge_advisories` reads this table; an entry whose
`check` names another test is judged there instead (the driver packages: `test_driver_packages_held`, which
prints the exact hold command). Add an entry here, with a judge test in selftests/test_judges_platform.py
that names its id: selftests check both, and that its source is a URL.
"""

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Advisory:
    id: str
    what: str
    symptom: str
    fix: str
    source: str  # the public report (URL)
    fail: bool = False  # a failure (it stops the deployment), else a warning (degraded but usable)
    kernel: str | None = None  # regular expression the whole `uname -r` matches
    cmdline_lacks: str | None = None  # affected unless /proc/cmdline holds this parameter (`kho=off`)
    bios_before: date | None = None  # affected when /sys/class/dmi/id/bios_date is before this day
    driver_min: str | None = None  # NVIDIA driver version range, min included
    driver_max: str | None = None  # max excluded
    driver_unheld: bool = False  # affected when NVIDIA driver packages can be upgraded behind the running module
    # The NCCL torch loads in the serving image, as gb10check/canary/nccl.py reports it (judged by test_image_nccl):
    nccl_min: str | None = None  # version range, min included
    nccl_max: str | None = None  # max excluded
    nccl_build: str | None = None  # "pip wheel" (a Python package's nvidia/nccl/lib), "system package" (/usr/lib/<triplet>)
    machine: str | None = None  # the node's `uname -m` (the image runs the node's architecture)
    nccl_dev: bool = False  # a development build: the library's own banner has a suffix after X.Y.Z
    env_lacks: str | None = None  # affected unless the serving container's environment holds this NAME=VALUE
    # The NVIDIA Container Toolkit on the node (`nvidia-ctk --version`; judged by test_container_toolkit):
    toolkit_min: str | None = None  # version range, min included
    toolkit_max: str | None = None  # max excluded
    toolkit_cdi: bool = False  # affected only where containers get the GPU through CDI (runtime mode cdi, or docker's CDI on)
    check: str | None = None  # the test that judges it, when not test_advisories


ADVISORIES: tuple[Advisory, ...] = (
    Advisory(
        id="kernel-7.0-kho",
        what="Linux 7.0.0 kernels (7.0.0-1019-nvidia on DGX OS) with Kexec HandOver enabled by default",
        symptom="NCCL init fails with 'Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory' under GPU "
                "memory pressure: KHO's scratch area (about 9.3 GiB) is handed back as CMA pageblocks that long-term "
                "pinning cannot use",
        fix="add kho=off to the kernel command line (GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, then sudo "
            "update-grub and reboot), or boot a 6.17 kernel",
        source="https://github.com/NVIDIA/NV-Kernels/pull/591",
        fail=True,
        kernel=r"7\.0\.0-\d+(-nvidia.*|-generic)?",
        cmdline_lacks="kho=off",
    ),
    Advisory(
        id="bios-cx7-gen5-x2",
        what="GB10 BIOS releases dated before April 2026",
        symptom="the second ConnectX-7 PCIe controller runs at Gen5 x2: ports link at 200G yet move about 13 Gb/s "
                "(ib_write_bw and TCP alike)",
        fix="update the BIOS (sudo fwupdmgr refresh && sudo fwupdmgr update, or the vendor's BIOS package), reboot, "
            "then measure the links again",
        source="https://github.com/NVIDIA/dgx-spark-playbooks/pull/108",
        bios_before=date(2026, 4, 1),
    ),
    Advisory(
        id="unattended-driver-upgrade",
        what="NVIDIA driver packages neither held nor excluded from unattended-upgrades",
        symptom="the driver is upgraded under the running kernel module; days later every CUDA start fails with "
                "'Failed to initialize NVML: Driver/library version mismatch' (seed: 580.159.03 loaded vs 580.173.02 "
                "installed after fifty days of uptime)",
        fix="hold the driver packages (sudo apt-mark hold ...) and upgrade them deliberately, on every node at once, "
            "followed by a reboot",
        source="https://github.com/pando85/homelab/pull/4110",
        driver_unheld=True,
        check="test_driver_packages_held",
    ),
    Advisory(
        id="nccl-aarch64-proxy-wedge",
        what="NCCL up to 2.29.2 from a pip wheel on aarch64",
        symptom="a TP=2 pair wedges after 20-26 minutes of concurrent load: proxy-op slots leak (a weak compare-and-swap "
                "retry) and one rank spins silently while the other waits (vLLM issues 41725 and 42354; the DGX OS "
                "build of 2.28.9 did not wedge)",
        fix="make torch in the image load NCCL 2.29.3 or later (pip install 'nvidia-nccl-cu13>=2.29.3' in the image), or "
            "the DGX OS system library (link /usr/lib/aarch64-linux-gnu/libnccl.so.2 over the wheel's "
            "nvidia/nccl/lib/libnccl.so.2), the same on every node; then pin it with deploy.nccl",
        source="https://github.com/NVIDIA/nccl/issues/2353",
        fail=True,
        nccl_max="2.29.3",
        nccl_build="pip wheel",
        machine="aarch64",
        check="test_image_nccl",
    ),
    Advisory(
        id="nccl-2.30.4-nvls",
        what="NCCL 2.30.4 without NCCL_NVLS_ENABLE=0",
        symptom="loading a mixture-of-experts model's weights hangs in NCCL's NVLS set-up",
        fix="set NCCL_NVLS_ENABLE: \"0\" in the serving container's environment (deploy.extra_environment), or use "
            "another NCCL release",
        source="https://github.com/NVIDIA/nccl/issues/2167",
        fail=True,
        nccl_min="2.30.4",
        nccl_max="2.30.5",
        env_lacks="NCCL_NVLS_ENABLE=0",
        check="test_image_nccl",
    ),
    Advisory(
        id="nccl-dev-build",
        what="a development build of NCCL (a suffix after X.Y.Z in its version banner)",
        symptom="all_gather ran at 3 GB/s bus bandwidth on a GB10 pair against 23.7 GB/s for the release build",
        fix="use a release build of NCCL in the image (a pip wheel of 2.29.3 or later, or the DGX OS libnccl2), the same "
            "on every node",
        source="https://github.com/NVIDIA/dgx-spark-playbooks/pull/103",
        nccl_dev=True,
        check="test_image_nccl",
    ),
    Advisory(
        id="toolkit-1.19.1-cdi-freeze",
        what="NVIDIA Container Toolkit 1.19.1 with CDI on a GB10",
        symptom="the host froze under heavy Docker vLLM load (model load, autotune, sustained inference) and needed a power "
                "cycle, the journal ending abruptly; the same workloads ran stable after going back to 1.19.0 with CDI off",
        fix="install toolkit 1.19.0 on every node (sudo apt-get install nvidia-container-toolkit=1.19.0-1 "
            "nvidia-container-toolkit-base=1.19.0-1 libnvidia-container-tools=1.19.0-1 libnvidia-container1=1.19.0-1), hold "
            "the four packages, set mode = \"legacy\" in /etc/nvidia-container-runtime/config.toml and restart docker",
        source="https://github.com/NVIDIA/nvidia-container-toolkit/issues/1910",
        fail=True,
        toolkit_min="1.19.1",
        toolkit_max="1.19.2",
        toolkit_cdi=True,
        check="test_container_toolkit",
    ),
    Advisory(
        id="toolkit-1.19.1-cuda-init",
        what="NVIDIA Container Toolkit 1.19.1",
        symptom="after the upgrade from 1.19.0, containers started with --gpus fail CUDA initialization (cuInit: "
                "CUDA_ERROR_UNKNOWN) while nvidia-smi works on the host; going back to 1.19.0 fixed it at once",
        fix="install toolkit 1.19.0 on every node (sudo apt-get install nvidia-container-toolkit=1.19.0-1 "
            "nvidia-container-toolkit-base=1.19.0-1 libnvidia-container-tools=1.19.0-1 libnvidia-container1=1.19.0-1) and "
            "hold the four packages (sudo apt-mark hold ...), then restart docker",
        source="https://github.com/NVIDIA/nvidia-container-toolkit/issues/1967",
        fail=True,
        toolkit_min="1.19.1",
        toolkit_max="1.19.2",
        check="test_container_toolkit",
    ),
)


def by_id(advisory_id: str) -> Advisory:
    return next(a for a in ADVISORIES if a.id == advisory_id)
