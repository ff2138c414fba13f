"""Firewall: with ufw active, the QSFP subnets and the API port are allowed and the rules survive a reboot."""

import pytest

from gb10check.checks import firewall
from gb10check.gather import read, reads
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


@reads("ufw_status", "ufw_user_rules", "ufw_conf", "ufw_live")
def test_firewall(node, cluster):
    status = read(node, "ufw_status")
    rules = read(node, "ufw_user_rules") if status.active else None
    fw = cluster.expect.firewall
    report(firewall.judge(node.name, status, rules, read(node, "ufw_conf"), read(node, "ufw_live"), [str(s) for s in fw.sources],
                          fw.ports, {link.netdev for link in node.spec.links}))
