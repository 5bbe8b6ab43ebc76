"""A run that kills itself (SIGKILL: no handler, no ``finally``) at a chosen point:
``python victim.py OUT FAULT``, FAULT one of

* ``finalize:N`` — inside the N-th checkpoint write, once orbax has written every file but
  before it renames the folder into place;
* ``manifest:N`` — after the N-th checkpoint is in place, before its manifest is written;
* ``row:N`` — halfway through writing the N-th metrics row;
* ``summary`` — after ``summary.json.tmp`` is written, before it replaces ``summary.json``;
* ``after:SECONDS`` — that long after the first metrics row (a random point of the run).
"""

import json
import os
import signal
import sys
import threading

from faultkit import DQN

import jaxrl_fdg as rl
from jaxrl_fdg.run import checkpoint, run_folder


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def _on_call(owner, name, n, before=None):
    """Replace ``owner.name`` so that its ``n``-th call dies (after ``before`` runs)."""
    real, calls = getattr(owner, name), []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            if before is not None:
                before(*args, **kwargs)
            _die()
        return real(*args, **kwargs)

    setattr(owner, name, wrapper)


def _half_row(self, row):
    with open(self.path / "metrics.jsonl", "a") as f:
        text = json.dumps(row) + "\n"
        f.write(text[: len(text) // 2])


def _half_summary(path, text):
    if path.name == "summary.json":
        path.with_suffix(".json.tmp").write_text(text)
        _die()


def main(out: str, fault: str) -> None:
    kind, _, arg = fault.partition(":")
    if kind == "finalize":
        from orbax.checkpoint._src.path import atomicity

        _on_call(atomicity.AtomicRenameTemporaryPath, "finalize", int(arg))
    elif kind == "manifest":
        _on_call(checkpoint, "_write_manifest", int(arg))
    elif kind == "row":
        _on_call(run_folder.RunFolder, "append_metrics", int(arg), before=_half_row)
    elif kind == "summary":
        real = run_folder.atomic_write
        run_folder.atomic_write = lambda p, t: (_half_summary(p, t), real(p, t))
    elif kind == "after":
        real_append = run_folder.RunFolder.append_metrics

        def append(self, row):
            if not getattr(append, "armed", False):
                append.armed = True
                threading.Timer(float(arg), _die).start()
            real_append(self, row)

        run_folder.RunFolder.append_metrics = append
    rl.train(DQN.replace(out=out, run_name="run"))
    print("finished", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
