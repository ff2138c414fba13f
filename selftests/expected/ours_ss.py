"""Facts asserted for our captures of ss/ (selftests/captures/ss: `ss -tanpH` and `ss -tanp` on the simulated pair while
a process on thinkstationpgx-30 held connections to thinkstationpgx-32 over the link 192.168.101.0/24 and over the
management network 198.18.5.0/24 to sshd, and tried a Gloo-like port there that the firewall drops: SYN-SENT)."""

A = {"#": 6,  # in address order
     "0.state": "LISTEN", "0.local": "0.0.0.0", "0.local_port": 22, "0.peer_port": None, "0.processes": [["sshd", 71]],
     "1.state": "ESTAB", "1.local": "192.168.101.10", "1.local_port": 58396, "1.peer": "192.168.101.11", "1.peer_port": 29500,
     "1.processes": [["python3", 615]],
     "3.state": "ESTAB", "3.local": "198.18.5.10", "3.peer": "198.18.5.11", "3.peer_port": 22,
     "4.state": "SYN-SENT", "4.peer": "198.18.5.11", "4.peer_port": 29500,
     "5.local": "::", "5.local_port": 22}
B = {"#": 7,
     "0.state": "LISTEN", "0.local": "*", "0.local_port": 5557,
     "3.state": "ESTAB", "3.local": "192.168.101.11", "3.peer": "192.168.101.10", "3.peer_port": 59662,  # [::ffff:...] as IPv4
     "5.state": "ESTAB", "5.local": "198.18.5.11", "5.local_port": 22, "5.peer": "198.18.5.10", "5.peer_port": 50036,
     "5.processes": [["sshd", 595]]}

EXPECTED = {
    "ours/ss/sim-a-thinkstationpgx-30-ss-tanpH-link-and-mgmt.txt": ("ss", A),
    "ours/ss/sim-a-thinkstationpgx-30-ss-tanp-with-header.txt": ("ss", A),
    "ours/ss/sim-b-thinkstationpgx-32-ss-tanpH-link-and-mgmt.txt": ("ss", B),
    "ours/ss/sim-b-thinkstationpgx-32-ss-tanp-with-header.txt": ("ss", B),
}

# The peer's addresses the fabric check sorts into links and management (`ip -j addr` on thinkstationpgx-32, same run).
EXPECTED["ours/ss/sim-b-thinkstationpgx-32-ip-j-addr.json"] = (
    "ip_j_addr", {"#": 6, "1.name": "enP7s7", "1.addresses.0.address": "198.18.5.11",
                  "5.name": "enP2p1s0f0np0", "5.addresses.0.address": "192.168.101.11",
                  "5.addresses.1.address": "fe80::885a:f8ff:feb9:ba83"})

# A connection the firewall let through on a Gloo-like port over the management network (a `ufw allow` for the capture),
# from each end; the head's TP=1 vLLM listens on its management address (EngineCore's ports); a closed socket (TIME-WAIT)
# has no owner.
EXPECTED.update({
    "ours/ss/sim-a-thinkstationpgx-30-ss-tanpH-gloo-like-port-over-mgmt.txt": (
        "ss", {"#": 19, "1.state": "LISTEN", "1.local": "0.0.0.0", "1.local_port": 20001, "1.processes": [["vllm", 285]],
               "3.local": "198.18.5.10", "3.local_port": 20001, "3.peer": "198.18.5.1",
               "4.state": "LISTEN", "4.local_port": 33255, "4.processes": [["VLLM::EngineCor", 549]],
               "10.state": "ESTAB", "10.local_port": 39976, "10.peer": "198.18.5.11", "10.peer_port": 29500,
               "10.processes": [["python3", 2670]]}),
    "ours/ss/sim-b-thinkstationpgx-32-ss-tanpH-gloo-like-port-over-mgmt.txt": (
        "ss", {"#": 6, "3.state": "ESTAB", "3.local_port": 29500, "3.peer": "198.18.5.10", "3.peer_port": 39976,
               "4.state": "TIME-WAIT", "4.processes": []}),
    "ours/ss/sim-a-thinkstationpgx-30-ss-tanpH-follower-to-head-api-over-mgmt.txt": (
        "ss", {"#": 19}),
    "ours/ss/sim-b-thinkstationpgx-32-ss-tanpH-follower-to-head-api-over-mgmt.txt": (
        "ss", {"#": 4, "2.state": "ESTAB", "2.local": "198.18.5.11", "2.local_port": 35300, "2.peer_port": 20001,
               "1.processes": [["sshd", 1494], ["sshd", 1491]]}),
})
