"""Facts asserted for the captures of ufw/ ("ours/..." = selftests/captures, the rest ../shared/captures)."""

EXPECTED = {
    "ufw/ufw-status-verbose-ufw-docker-issue21.txt": (
        "ufw_status", {
            "active": True,
            "default_incoming": "deny",
            "default_routed": "deny",
            "#rules": 6,
            "rules.0.to.port": "22",
            "rules.0.to.app": "OpenSSH",
            "rules.1.to.v6": True,
            "rules.2.direction": "FWD",
        }),
    "ufw/ufw-upstream-testsuite-status-plain-padded.txt": (
        "ufw_status", {
            "active": True,
            "#rules": 17,
            "rules.4.to.address": "192.168.0.1",
            "rules.4.source.address": "10.0.0.0/8",
            "rules.4.action": "DENY",
            "rules.9.source.port": "5469",
            "rules.10.action": "LIMIT",
            "rules.16.to.address": "2001:db8:3:4:5:6:7:8",
        }),
    "ufw/ufw-upstream-testsuite-status-verbose-app-profiles-padded.txt": (
        "ufw_status", {
            "#rules": 29,
            "default_routed": "disabled",
            "rules.1.to.port": "137,138",
            "rules.1.to.proto": "udp",
            "rules.1.to.app": "Samba",
            "rules.20.to.address": "2001:db8::/32",
        }),
    "ufw/user.rules-as-printed-by-ufw-dry-run-upstream-testsuite.txt": (
        "ufw_user_rules", {
            "#tuples": 1,
            "tuples.0.action": "allow",
            "tuples.0.dst": "96.0.0.0/4",
            "tuples.0.src": "0.0.0.0/0",
            "tuples.0.direction": "in",
            "iptables_rules": 8,
        }),
    "ufw/user.rules-fresh-install-template-ufw-conf.txt": (
        "ufw_user_rules", {
            "#tuples": 0,
            "iptables_rules": 3,
        }),
}
