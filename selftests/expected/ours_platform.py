"""Facts asserted for our own captures of the kernel log and dpkg (selftests/captures/kmsg, dpkg, df; how each was made:
selftests/captures/README.md). Values read off the files themselves."""

EXPECTED = {
    "ours/kmsg/host-dmesg.txt": (
        "kernel_log", {
            "#entries": 12,
            "source": None,
            "entries.0.since_boot_s": 815.056139,
            "entries.0.text": "gb10sim-br: port 2(gb10sim-m1) entered disabled state",
            "entries.0.stamp": None,
            "entries.11.since_boot_s": 815.25005,
        }),
    "ours/kmsg/host-dmesg-T.txt": (
        "kernel_log", {
            "#entries": 6,
            "entries.0.stamp": "Mon Nov 30 20:48:20 2026",
            "entries.0.since_boot_s": None,
            "entries.1.text": "gb10sim-m1 (unregistering): left allmulticast mode",
        }),
    "ours/kmsg/host-dmesg-x.txt": (
        "kernel_log", {
            "#entries": 6,
            "entries.0.since_boot_s": 815.056139,
            "entries.0.text": "gb10sim-br: port 2(gb10sim-m1) entered disabled state",
            "entries.5.since_boot_s": 815.195603,
        }),
    "ours/kmsg/host-dev-kmsg.txt": (
        "kernel_log", {
            "#entries": 6,
            "entries.0.since_boot_s": 815.056139,
            "entries.0.text": "gb10sim-br: port 2(gb10sim-m1) entered disabled state",
            "entries.5.since_boot_s": 815.195603,
        }),
    "ours/dpkg/host-dpkg-query-openssh-libc6.txt": (
        "dpkg_query", {
            "#": 5,
            "0.package": "libc6",
            "0.want": "install",
            "0.state": "installed",
            "4.package": "openssh-sk-helper",
            "4.want": "unknown",
            "4.state": "not-installed",
        }),
    "ours/apt/host-apt-config-dump-unattended-upgrade.txt": (
        "unattended_upgrades", {
            "blacklist": ["nvidia-", "libnvidia-compute-580$", "nvidia-driver-580-open$"],
            "origins": ["${distro_id}:${distro_codename}"],
        }),
    "ours/df/host-df-B1-output-target-avail.txt": (
        "df", {"#": 2, "0.target": "/", "0.avail_bytes": 80579964928, "0.path": None, "1.target": "/"}),
    "ours/df/host-df-B1-missing-path.txt": (
        "df", {"#": 1, "0.target": "/", "0.avail_bytes": 80579964928}),
    "ours/df/host-df.txt": (
        "df", {"#": 1, "0.target": "/", "0.filesystem": "/dev/vda", "0.avail_bytes": 78691380 * 1024}),
    "ours/df/host-df-h.txt": (
        "df", {"#": 1, "0.target": "/", "0.filesystem": "/dev/vda", "0.avail_bytes": 76 * 2**30}),
}
