"""Facts about every registered algorithm, read from the code, and the pages drawn from them.

The docs build (``hooks.py``) renders one page per algorithm and an index; the README's algorithm
table is checked against the same facts (``tests/docs/test_readme.py``). Nothing here is typed by
hand: the paper and the method come from the algorithm module's docstring, the defaults from
``AlgorithmSpec.defaults`` and the hyperparameter dataclass, the action spaces from the
algorithm's own ``check``.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any, NamedTuple

from jaxrl_fdg import config as cfg
from jaxrl_fdg import policies
from jaxrl_fdg.core import algorithm as algorithms
from jaxrl_fdg.envs.spaces import Box, Dict, Discrete
from jaxrl_fdg.errors import ConfigError

# Observation spaces the probes below offer: a vector, and an image large enough for any torso.
_VECTOR = Box(low=-1.0, high=1.0, shape=(4,))
_ACTIONS = {
    "discrete": Discrete(2),
    "continuous": Box(low=-1.0, high=1.0, shape=(1,)),
}


# Hyperparameters that name a key of a dict observation for one of an algorithm's networks.
_OBSERVATION_KEYS = ("actor_observation", "critic_observation", "agent_observation", "mixer_state")


class Facts(NamedTuple):
    name: str
    summary: str
    doc: str
    hparams: type
    defaults: dict[str, Any]
    action_spaces: tuple[str, ...]
    memory: tuple[str, ...]
    torsos: tuple[str, ...]
    fields: tuple[dataclasses.Field, ...]


def _accepts(spec: algorithms.AlgorithmSpec, action_space: Any, **hparams: Any) -> bool:
    """Whether ``spec.check`` accepts ``action_space`` (with ``hparams`` set): a ConfigError
    that names the action space, or a setting given here, is a refusal; the probe sizes (4 envs
    × 8 steps) divide every default minibatch count."""
    hp = dataclasses.replace(spec.hparams(), **hparams)
    if "num_minibatches" in {f.name for f in dataclasses.fields(hp)}:
        hp = dataclasses.replace(hp, num_minibatches=1)
    # A vector, or a dict of vectors under the keys the algorithm's own networks read (MAPPO's
    # actor and critic, QMIX's agents and mixer, read two keys of the observation).
    keys = [getattr(hp, k, "") for k in _OBSERVATION_KEYS]
    observation = Dict({k: _VECTOR for k in keys if k}) if any(keys) else _VECTOR
    ctx = algorithms.AlgorithmContext(
        observation_space=observation,
        action_space=action_space,
        num_envs=4,
        rollout_len=8,
        num_iterations=10,
        hparams=hp,
    )
    try:
        spec.check(ctx)
    except ConfigError as e:
        if "action space" in str(e) or any(name in str(e) for name in hparams):
            return False
        raise
    return True


def _choices(field: dataclasses.Field) -> tuple[str, ...]:
    """The values a string field's help lists before its first colon or semicolon,
    e.g. ``"recurrent core after the torso: none, gru or lstm"`` -> ``("none", "gru", "lstm")``."""
    text = field.metadata.get("help", "")
    found = re.findall(r"\b([a-z][a-z0-9_]*)\b", text.split(":", 1)[-1])
    return tuple(word for word in found if word not in {"or", "for", "first", "small", "s"})


def facts(name: str) -> Facts:
    spec = algorithms.get(name)
    fields = tuple(dataclasses.fields(spec.hparams))
    by_name = {f.name: f for f in fields}
    memory: tuple[str, ...] = ()
    if "memory" in by_name:
        from jaxrl_fdg.fragments.algorithms.actor_critic import MEMORIES

        memory = tuple(m for m in MEMORIES if m != "none" and _accepts(spec, Discrete(2), memory=m))
    torsos: tuple[str, ...] = ()
    if "torso" in by_name:
        from jaxrl_fdg.fragments.algorithms.actor_critic import TORSOS

        torsos = tuple(t for t in TORSOS if t != "mlp")
    defaults = {k: spec.defaults.get(k, v) for k, v in cfg.RUN_DEFAULTS.items()}
    module = sys.modules[spec.build.__module__]
    return Facts(
        name=name,
        summary=spec.summary,
        doc=module.__doc__ or "",
        hparams=spec.hparams,
        defaults=defaults,
        action_spaces=tuple(k for k, space in _ACTIONS.items() if _accepts(spec, space)),
        memory=memory,
        torsos=torsos,
        fields=fields,
    )


def all_facts() -> list[Facts]:
    return [facts(name) for name in algorithms.registered()]


def rst_to_markdown(text: str) -> str:
    """Docstring markup to Markdown: ``code`` -> `code`, :role:`~a.b.C` -> `C`."""
    text = re.sub(r":[a-z]+:`~?\.?([^`]+)`", lambda m: f"`{m.group(1).split('.')[-1]}`", text)
    return text.replace("``", "`")


def _dedent_doc(doc: str) -> str:
    lines = doc.strip("\n").splitlines()
    if not lines:
        return ""
    import textwrap

    return lines[0].strip() + "\n" + textwrap.dedent("\n".join(lines[1:]))


def _value(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def placements_table() -> str:
    rows = [
        "| placement | what it does | fusion modes |",
        "|---|---|---|",
    ]
    for name in policies.registered():
        placement = policies.get(name)
        modes = ", ".join(f"`{m}`" for m in placement.fusion_modes)
        rows.append(f"| `{name}` | {placement.summary} | {modes} |")
    return "\n".join(rows)


def page(f: Facts) -> str:
    """One algorithm's page."""
    doc = rst_to_markdown(_dedent_doc(f.doc))
    title, _, body = doc.partition("\n")
    run = f.defaults
    lines = [
        f"# {f.name.upper()}",
        "",
        f"*{f.summary}.*",
        "",
        "```bash",
        f"jaxrl-fdg train --algo {f.name}",
        "```",
        "",
        f"trains on `{run['env']}` for {run['total_steps']:,} environment steps, "
        f"{run['num_envs']} environments × {run['rollout_len']} steps per iteration "
        f"(`AlgorithmSpec.defaults`; any flag overrides them).",
        "",
        "## Method",
        "",
        title,
        "",
        body.strip(),
        "",
        "## What it runs on",
        "",
        "| | |",
        "|---|---|",
        f"| action spaces | {', '.join(f.action_spaces)} |",
        f"| recurrent policy | {_memory_cell(f)} |",
        f"| image observations | {_torso_cell(f)} |",
        "",
        "Environments: any registered environment or adapter (`jaxrl-fdg list`) whose action space "
        "is listed above. Placements (`--placement`), with the fusion modes each runs:",
        "",
        placements_table(),
        "",
        f"## Hyperparameters (`{f.hparams.__name__}`)",
        "",
        f"Each is a flag of `jaxrl-fdg train --algo {f.name}` (`--flag-name VALUE`) and a key of "
        "a config file's `[hparams]` table.",
        "",
        "| flag | default | meaning |",
        "|---|---|---|",
    ]
    for field in f.fields:
        flag = "--" + field.name.replace("_", "-")
        help_text = field.metadata.get("help", "").replace("|", "\\|")
        lines.append(f"| `{flag}` | `{_value(field.default)}` | {help_text} |")
    lines += ["", f"Source: `jaxrl_fdg.{f.hparams.__module__.split('jaxrl_fdg.', 1)[-1]}`."]
    return "\n".join(lines) + "\n"


def _memory_cell(f: Facts) -> str:
    if not f.memory:
        return "no"
    return ", ".join(f"`--memory {m}`" for m in f.memory)


def _torso_cell(f: Facts) -> str:
    if not f.torsos:
        return "flattened into the MLP"
    return ", ".join(f"`--torso {t}`" for t in f.torsos)


def index() -> str:
    lines = [
        "# Algorithms",
        "",
        "Every registered algorithm (`jaxrl-fdg list`), with what its own checks accept. Each "
        "runs under every fusion mode and placement; its page has the method, the paper and "
        "every hyperparameter with its default.",
        "",
        "| algorithm | | action spaces | recurrent | image torso | default run |",
        "|---|---|---|---|---|---|",
    ]
    for f in all_facts():
        run = f.defaults
        lines.append(
            f"| [{f.name}]({f.name}.md) | {f.summary} | {', '.join(f.action_spaces)} "
            f"| {_memory_cell(f)} | {_torso_cell(f) if f.torsos else '—'} "
            f"| {run['env']}, {run['total_steps']:,} steps |"
        )
    return "\n".join(lines) + "\n"
