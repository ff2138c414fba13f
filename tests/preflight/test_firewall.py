"""Firewall: with ufw active, the QSFP subnets and the API port are allowed and the rules survive a reboot."""

import pytest

from gb10check import gather
from gb10check.checks import firewall
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def test_firewall(node, cluster):
    status = gather.parsed(node, "ufw_status", gather.UFW_STATUS, sudo=True)
    if not status.active:
        print(f"{node.name}: ufw is inactive; nothing filters the QSFP links")  # the judge passes it; -rP shows this
    rules = gather.parsed(node, "ufw_user_rules", gather.UFW_USER_RULES, sudo=True) if status.active else None
    conf = gather.output(node, gather.UFW_CONF, sudo=True)  # unreadable: NOT CHECKED, never "not enabled at boot"
    live = gather.result(node, gather.UFW_LIVE, sudo=True).stdout
    fw = cluster.expect.firewall
    report(firewall.judge(node.name, status, rules, conf, live, [str(s) for s in fw.sources], fw.ports,
                          {link.netdev for link in node.spec.links}))
