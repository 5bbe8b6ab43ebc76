"""One process of a data-parallel run across two processes (2 CPU devices each), for the tests
of checkpoints across processes: ``python process_victim.py PROCESS_ID COORDINATOR OUT FAULT
[RESUME]``. FAULT is ``none``, ``kill-after-save:N`` (this process SIGKILLs itself once its N-th
checkpoint is written) or ``sigterm-after-save:N`` (it sends itself SIGTERM then). With RESUME
(a run folder) it resumes that run. It prints ``DIGEST <sha256> <status>`` of the final state
(every process computes the same, from all shards)."""

import hashlib
import os
import signal
import sys

import jax
import numpy as np

import jaxrl_fdg as rl
from jaxrl_fdg.policies import distributed
from jaxrl_fdg.run.checkpoint import Checkpointer

# 24 iterations of 8 envs × 8 steps, a checkpoint every 6 iterations, a row every 2.
CONFIG = rl.TrainConfig(
    algo="ppo",
    total_steps=8 * 8 * 24,
    num_envs=8,
    rollout_len=8,
    log_every=2,
    checkpoint_every=8 * 8 * 6,
    progress=False,
    compile_cache=False,
    placement="data_parallel",
    devices=4,
    hparams={"num_minibatches": 2, "update_epochs": 2},
)


def main(process_id: str, coordinator: str, out: str, fault: str, resume: str = "") -> None:
    if fault != "none":
        kind, _, n = fault.partition(":")
        sent = {"kill-after-save": signal.SIGKILL, "sigterm-after-save": signal.SIGTERM}[kind]
        real, saves = Checkpointer.save, []

        def save_then_die(self, state):
            done = real(self, state)
            saves.append(done)
            if len(saves) == int(n):
                os.kill(os.getpid(), sent)
            return done

        Checkpointer.save = save_then_die
    config = CONFIG.replace(
        out=out, run_name="run", coordinator=coordinator, num_processes=2,
        process_id=int(process_id),
    )  # fmt: skip
    result = rl.train(config, resume=resume or None)
    state = result.state._replace(key=jax.random.key_data(result.state.key))
    digest = hashlib.sha256()
    for leaf in jax.tree.leaves(distributed.host_values(state)):
        digest.update(np.ascontiguousarray(leaf).tobytes())
    print("DIGEST", digest.hexdigest(), result.summary["status"], flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
