"""The ``jaxrl-fdg train`` command of the suite's DQN run, sending itself a signal at a chosen
stage: ``python signal_victim.py OUT SIGNAL STAGE [FLAG...]``. It writes the time it sent the
signal (``time.time()``) to ``OUT/sent``, then goes on as the handler lets it. STAGE is one of

* ``parse`` — before the command's arguments are parsed;
* ``folder`` — before the run folder's ``config.toml`` is written;
* ``compile`` — as the programs start compiling;
* ``chunk`` — as the first chunk is dispatched;
* ``evaluation`` — as the first evaluation is dispatched (give ``--eval-every``);
* ``checkpoint`` — as the first checkpoint is written;
* ``summary`` — as the summary is written.
"""

import os
import signal
import sys
import time
from pathlib import Path

from faultkit import DQN_FLAGS

from jaxrl_fdg import cli
from jaxrl_fdg.cli import train as train_command
from jaxrl_fdg.policies import fusion
from jaxrl_fdg.run.checkpoint import Checkpointer
from jaxrl_fdg.run.run_folder import RunFolder

HOOKS = {
    "parse": (train_command, "parser"),
    "folder": (RunFolder, "write_config"),
    "compile": (fusion.Plan, "start"),
    "chunk": (fusion.Plan, "advance"),
    "evaluation": (fusion.Plan, "call"),  # the plan's one use of call: the evaluation
    "checkpoint": (Checkpointer, "save"),
    "summary": (RunFolder, "write_summary"),
}


def main(out: str, name: str, stage: str, *flags: str) -> None:
    owner, attribute = HOOKS[stage]
    real, sent = getattr(owner, attribute), []

    def send_then_call(*args, **kwargs):
        if not sent:
            sent.append(1)
            Path(out, "sent").write_text(repr(time.time()))
            os.kill(os.getpid(), signal.Signals[name])
        return real(*args, **kwargs)

    setattr(owner, attribute, send_then_call)
    sys.argv = ["jaxrl-fdg", "train", *DQN_FLAGS, "--out", out, "--run-name", "run", *flags]
    sys.exit(cli.main())


if __name__ == "__main__":
    main(*sys.argv[1:])
