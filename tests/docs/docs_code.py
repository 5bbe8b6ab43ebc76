"""The code in the documentation: fenced blocks, the shell commands in them, and how the docs
tests run each at a tiny size.

A shell command is split as the shell would (quotes, comments, ``\\`` continuations, ``&&``).
``jaxrl-fdg`` runs as ``python -m jaxrl_fdg`` with the sizes of a training run cut down (every
``--total-steps``, ``--num-envs``, ``--rollout-len``, ``--eval-every``, ``--checkpoint-every``,
``--pbt-every`` and ``--halving-every`` replaced, or added), so that a documented command runs in
seconds and keeps its meaning: the same algorithm, environment, fusion mode, placement and flags.
Commands run in a folder laid out as a checkout's root is for them (:func:`workspace`).

Two attributes on a block's first line change what the tests do with it:

* ``title="name.py"`` on a Python block: a file the page asks the reader to save under that name.
  The tests write it into the page's folder (then run it, so it at least imports), and the blocks
  after it use it: ``jaxrl-fdg train --algo name.py:SPEC``, ``import name``; on a TOML block
  (``title="name.toml"``, an experiment file), saved with every ``total_steps`` cut down;
* ``excerpt="path/in/the/repository.py"``: lines of that file, cut where a line reads ``...``. The
  tests check that they are there, in that order, and do not run them.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```", re.S | re.M)
ATTRIBUTES = re.compile(r'(\w+)="([^"]*)"')
ELIDED = ("...", "# ...")  # an excerpt's cut

# A run of 4 iterations of 8 environments × 8 steps: enough for a boundary, an evaluation and a
# checkpoint where the command asks for them.
TINY = {
    "--total-steps": "256",
    "--num-envs": "8",
    "--rollout-len": "8",
    "--eval-every": "128",
    "--checkpoint-every": "128",
    "--pbt-every": "128",  # a population step every other iteration
    "--halving-every": "128",
}
APPENDED = ("--total-steps", "--num-envs", "--rollout-len")
TINY_PYTHON = (re.compile(r"total_steps=[0-9_]+"), "total_steps=1024")  # PPO: 2 iterations
TINY_TOML_STEPS = "2048"  # an experiment file's budgets: `total_steps = N` and its table's rows


class Block(NamedTuple):
    """A fenced block: its language, its body and the ``key="value"`` attributes of its first
    line (see the module docstring)."""

    language: str
    body: str
    attributes: dict[str, str]

    @property
    def file(self) -> str | None:
        """The name a Python or TOML block is saved under (its ``title``), or ``None``."""
        return self.attributes.get("title") if self.language in ("python", "toml") else None

    @property
    def excerpt(self) -> str | None:
        """The repository file an excerpt block is cut from, or ``None``."""
        return self.attributes.get("excerpt")


def fenced(path: Path, *languages: str) -> list[Block]:
    """Every fenced block of ``path`` in ``languages``, in order."""
    return [
        Block(lang, body, dict(ATTRIBUTES.findall(info)))
        for lang, info, body in FENCE.findall(path.read_text())
        if lang in languages
    ]


def blocks(path: Path, *languages: str) -> list[tuple[str, str]]:
    """``(language, body)`` of every fenced block of ``path`` in ``languages``, excerpts left
    out (they are checked, not run)."""
    return [(b.language, b.body) for b in fenced(path, *languages) if b.excerpt is None]


def workspace(folder: Path, page: Path | None = None) -> Path:
    """``folder`` laid out for a page's commands as a checkout's root is: ``examples/`` (a link
    to the repository's), and, given ``page``, every file it asks the reader to save."""
    link = folder / "examples"
    if not link.exists():
        link.symlink_to(ROOT / "examples")
    for block in fenced(page, "python") if page else ():
        if block.file:
            save(block, folder)
    return folder


def save(block: Block, folder: Path) -> Path:
    """Write a file block into ``folder`` under its title (a plain file name)."""
    name = block.file
    if not name or Path(name).name != name or name == "examples":
        raise ValueError(f"a file block's title is a plain file name, got {name!r}")
    target = folder / name
    body = block.body
    if block.language == "toml":
        body = tiny_toml(body)
    target.write_text(body)
    return target


def tiny_toml(text: str) -> str:
    """An experiment file with every budget cut to :data:`TINY_TOML_STEPS`: the line
    ``total_steps = N`` and each row of a ``[total_steps]`` table."""
    lines, table = [], None
    for line in text.splitlines():
        header = re.match(r"^\[+([^\]]+)\]+", line)
        if header:
            table = header.group(1).strip()
        budget = line.startswith("total_steps =") or (table == "total_steps" and "=" in line)
        lines.append(re.sub(r"=\s*[0-9_]+", f"= {TINY_TOML_STEPS}", line) if budget else line)
    return "\n".join(lines) + "\n"


def missing_from_excerpt(block: Block) -> list[str]:
    """The lines of an excerpt block that its file lacks in that order (``...`` lines cut)."""
    lines = (ROOT / block.excerpt).read_text().splitlines()
    missing, at = [], 0
    for line in block.body.splitlines():
        if line.strip() in ELIDED:
            continue
        try:
            at = lines.index(line, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def commands(block: str) -> list[list[str]]:
    """Each command of a shell block as argv (environment assignments first)."""
    text = block.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in words:
            if word == "&&":
                found.append(command)
                command = []
            else:
                command.append(word)
        if command:
            found.append(command)
    return found


def split_env(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Leading ``NAME=value`` words, then the command."""
    env: dict[str, str] = {}
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        name, value = argv[0].split("=", 1)
        env[name] = value
        argv = argv[1:]
    return env, argv


def jaxrl_fdg_commands(path: Path) -> list[list[str]]:
    """The arguments of every ``jaxrl-fdg`` command in the shell blocks of ``path``."""
    found = []
    for _, body in blocks(path, "bash"):
        for argv in commands(body):
            _, argv = split_env(argv)
            if argv and Path(argv[0]).name == "jaxrl-fdg":
                found.append(argv[1:])
    return found


def tiny(args: list[str]) -> list[str]:
    """``jaxrl-fdg`` arguments at the tiny size (train and profile; others unchanged)."""
    if not args or args[0] not in ("train", "profile") or "--help" in args:
        return list(args)
    out, i = [], 0
    while i < len(args):
        if args[i] in TINY and i + 1 < len(args):
            out += [args[i], TINY[args[i]]]
            i += 2
            continue
        out.append(args[i])
        i += 1
    for flag in APPENDED:
        if flag not in out:
            out += [flag, TINY[flag]]
    if args[0] == "train" and "--resume" not in out:
        out.append("--no-progress")
    return out


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 900):
    """Run one documented command at its tiny size in ``cwd``; the completed process."""
    extra, argv = split_env(argv)
    environment = {**os.environ, **extra, **(env or {})}
    name = Path(argv[0]).name
    if name == "jaxrl-fdg":
        argv = [sys.executable, "-m", "jaxrl_fdg", *tiny(argv[1:])]
    elif name in ("python", "python3"):
        argv = [sys.executable, *argv[1:]]
    elif name == "cat" and len(argv) == 3 and argv[1] == ">":  # heredocs are not run here
        raise ValueError(f"cannot run {argv}")
    return subprocess.run(
        argv, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )


def run_python(code: str, cwd: Path, timeout: int = 900):
    """Run a documented Python block at the tiny size (every ``total_steps=`` cut down)."""
    pattern, replacement = TINY_PYTHON
    script = cwd / "block.py"
    script.write_text(pattern.sub(replacement, code))
    return run_script(script, cwd, timeout)


def run_script(script: Path, cwd: Path, timeout: int = 900):
    """Run a Python file in ``cwd`` (which is on its import path, so it imports the files a page
    saved there)."""
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def explain(proc: subprocess.CompletedProcess) -> str:
    return f"{shlex.join(map(str, proc.args))}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
