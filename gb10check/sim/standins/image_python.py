"""python3 first on the PATH of the simulated nodes' image. The programs that need the GPU or the RDMA fabric this
machine lacks are answered by their stand-ins: the compute canary (gb10check/canary/matmul.py, in a container given the
GPU) by matmul.py, the collectives canary (gb10check/canary/collectives.py) by nccl.py. Every other program, unread,
runs in the real python3: the next one on the PATH."""

import os
import sys

from . import common, matmul, nccl


def python3(args: list[str]) -> int:
    python = matmul.real_python()
    if args[:1] == ["-"]:  # a program on stdin
        program = sys.stdin.buffer.read()
        if program.startswith(matmul.MATMUL) and os.path.exists(common.STATE):  # the hook gave the container the GPU
            return matmul.answer(args[1:], python)
        if nccl.CANARY_MARK.encode() in program and "--rank" in args:
            return nccl.collectives(args[1:])
        fd = os.memfd_create("program")  # the program, unread, for the real python3's stdin
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
        os.dup2(fd, 0)
    os.execv(python, [python, *args])
