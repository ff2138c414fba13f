"""The simulated GB10 cluster: namespaces with real sshd, ufw and interfaces; stand-ins for GPU and RDMA.

Each node is a network namespace plus private mount, PID and UTS namespaces, an overlay of the
host's root with a writable layer on tmpfs, and a chroot. PID 1 of a node is `boot.py`, which
builds the node, starts sshd and keeps the stand-in /sys/class/infiniband tree in step with the
real interfaces. Nothing routes out: nodes have no default route and forwarding stays off.
"""
