"""Firewall: with ufw active, the QSFP subnets and the API port are allowed and the rules survive a reboot."""

import pytest

from gb10check.checks import firewall
from gb10check.gather import parsed
from gb10check.verdict import report

pytestmark = pytest.mark.preflight


def test_firewall(node, cluster):
    status = parsed(node, "ufw_status", "ufw status verbose", sudo=True)
    if not status.active:
        print(f"{node.name}: ufw is inactive; nothing filters the QSFP links")  # passes, and says so (-rP)
        return
    rules = parsed(node, "ufw_user_rules", "cat /etc/ufw/user.rules", sudo=True)
    conf = node.run("cat /etc/ufw/ufw.conf", sudo=True).stdout
    live = node.run("iptables -S ufw-user-input", sudo=True).stdout
    fw = cluster.expect.firewall
    report(firewall.judge(node.name, status, rules, conf, live, [str(s) for s in fw.sources], fw.ports))
