"""Gathering for the checks: the facts each check declares, read once per node per run, concurrently.

- registry: every fact by name (command, root or not, tool and package, reader, timeout, what it depends on);
  `read(node, name)` is the one way a check reads one, `@reads(...)` how it declares them.
- batch: the one shell script per node that runs a batch's commands at once, each bounded.
- fleet: the run's nodes and their gathered facts; programs run once per node or on every node at once.
- programs: what runs beside the batch (canaries, the compute timing, the shard read, dry runs, ib_write_bw ...).
- shared: what a run's pytest-xdist workers share, and the port locks.
- commands: the command behind each fact.
A fact that cannot be had is NOT CHECKED for the checks that need it, never a failure of the cluster.
"""

from .batch import LOOK_FIRST, TIMED_OUT, Output, Unreadable, batch_script, read_batch, starts_container
from .commands import *  # noqa: F401,F403  (the commands, for the helpers that run one live: deploy, sim)
from .fleet import Fleet
from .programs import (SAMPLES_MARK, SMI_SAMPLE, ComputeRun, DryRun, canary_timeout, clock_offset, compose_dry_run, compute,
                       collectives_command, compute_command, compute_timeout, fastest_compute, ib_write_bw, nccl_all_gather, nccl_link_pair,
                       nccl_collectives, parse_or_error,
                       own_shard_read_rate, parsed_output, peer_shard_read_rate, program, program_json, ray_head_output, service_args,
                       shard_read_rate, vllm_args)
from .registry import FACTS, Fact, FactNotDeclared, read, reads
from .shared import dump_output, exclusive, load_output, port_lock, remove_shared, run_shared, shared_path
