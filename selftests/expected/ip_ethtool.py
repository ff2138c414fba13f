"""Facts asserted for the captures of ip_ethtool/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "ip_ethtool/dgxspark-playbook-nccl-ip-addr-show-linklocal.txt": (
        "ip_addr", {
            "#": 1,
            "0.name": "enp1s0f1np1",
            "0.state": "up",
            "0.mtu": 1500,
            "0.addresses.0.address": "169.254.35.62",
            "0.addresses.0.prefixlen": 16,
            "0.addresses.0.scope": "link",
            "0.addresses.1.family": "inet6",
        }),
    "ip_ethtool/ip-j-addr-wlan0-169.254-scope-global-noprefixroute-nix_stat-reformatted.json": (
        "ip_j_addr", {
            "#": 4,
            "1.name": "end0",
            "1.state": "down",
            "2.addresses.1.address": "169.254.11.146",
            "2.addresses.1.scope": "global",
            "3.mtu": 1280,
        }),
    "ip_ethtool/dgxspark-playbook-switch-ethtool-speed-grep-100G.txt": (
        "ethtool", {
            "#": 2,
            "0.interface": "enp1s0f1np1",
            "0.speed_mbps": 100000,
            "1.interface": "enP2p1s0f1np1",
        }),
    "ip_ethtool/dgxspark-playbook-switch-ethtool-speed-grep-200G.txt": (
        "ethtool", {
            "#": 2,
            "0.speed_mbps": 200000,
            "1.speed_mbps": 200000,
        }),
    "ip_ethtool/ethtool-cx4lx-mlx5-10G-up-lanes-idx71571650010.txt": (
        "ethtool", {
            "#": 1,
            "0.interface": "nic_pve02_stor",
            "0.speed_mbps": 10000,
            "0.lanes": 1,
            "0.link_detected": True,
            "0.duplex": "full",
        }),
}
