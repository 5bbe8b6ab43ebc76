"""Memory: whether a run's compiled programs fit, before its first chunk runs, and one line that
names the settings to reduce when they do not (or when a device runs out anyway).

The prediction reads XLA's memory analysis of each compiled program: the bytes its outputs and
temporaries need beyond its arguments (the loop state, in memory already once ``init`` has run).
It is compared with what the device has free: on an accelerator, its allocator's limit less what
is in use; on the CPU, the kernel's ``MemAvailable``. Where neither is known, nothing is
predicted. A run whose state alone does not fit fails while ``init`` runs, which is reported the
same way. The CPU cannot always say so: with the kernel's overcommit, memory that runs out while
a program runs is the kernel's out-of-memory killer's to end (``SIGKILL``), which no process can
report; the prediction is the defence there.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import jax

from jaxrl_fdg.config import Resolved
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.envs import spaces
from jaxrl_fdg.errors import ConfigError


def is_out_of_memory(error: BaseException) -> bool:
    return isinstance(error, jax.errors.JaxRuntimeError) and "RESOURCE_EXHAUSTED" in str(error)


def free_bytes(device: Any) -> int | None:
    """Bytes ``device`` can still allocate, or ``None`` where it does not say."""
    if device.platform == "cpu":
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
        return None
    try:
        stats = device.memory_stats() or {}
    except Exception:  # a backend without allocator statistics
        return None
    if "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))


def needed_bytes(compiled: Any) -> int | None:
    """What one call of ``compiled`` allocates beyond its arguments (outputs and temporaries),
    per device, from XLA's memory analysis; ``None`` where XLA gives none."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # not every backend analyses every program
        return None
    if stats is None:
        return None
    out = stats.output_size_in_bytes - stats.alias_size_in_bytes
    return max(0, out) + stats.temp_size_in_bytes


def check_programs(
    resolved: Resolved,
    programs: dict[str, Any],
    state: LoopState | None = None,
    reduce: str | None = None,
    what: str = "the run",
) -> None:
    """Raise :class:`ConfigError` (naming the settings to reduce) where the run's compiled
    programs need more memory than the device has free. ``state``: the loop state, if it is in
    memory already; else ``programs`` holds ``init``, whose outputs are the state to come.
    ``reduce``: what to say to reduce (default: :func:`advice`); ``what``: what does not fit."""
    device = jax.devices()[0]
    free = free_bytes(device)
    if free is None:
        return
    if state is None:
        if "init" not in programs:
            return
        state = programs["init"].out_info  # the shapes of the state init will make
        coming = _bytes(state)
    else:
        coming = 0
    needs = {name: needed_bytes(c) for name, c in programs.items() if name != "init"}
    needs = {name: n for name, n in needs.items() if n is not None}
    if not needs:
        return
    name = max(needs, key=needs.get)
    if coming + needs[name] > free:
        where = "this machine" if device.platform == "cpu" else device.device_kind
        state_text = f"its state {_size(_bytes(state))} and " if coming else ""
        if reduce is None and len(resolved.lanes) > 1:  # the state in memory is freed too
            held = 0 if coming else _bytes(state)
            fit = lanes_that_fit(resolved, _bytes(state) + needs[name], free + held)
            reduce = lanes_advice(resolved, fit) if fit else None
        raise ConfigError(
            f"{what} does not fit in memory: {state_text}its program {name!r} "
            f"{_size(needs[name])} more, and {where} has {_size(free)} free; "
            + (reduce or advice(resolved, state))
        )


def lanes_that_fit(resolved: Resolved, need: int, free: int) -> int | None:
    """The most lanes (seeds × sweep points) of ``resolved``'s run that fit in ``free`` bytes,
    where all its lanes need ``need`` (state and largest program). The state and temporaries
    of a vmapped program grow with its lanes, over a part that does not (the program's own
    buffers, counters): the need is taken as linear between one lane's, read from its
    programs compiled (not run) for one lane, and ``need``. ``None`` where one lane's need
    cannot be read or does not fall short of ``need``; 0 where one lane does not fit."""
    lanes = len(resolved.lanes)
    try:
        one = compiled_need(_one_lane(resolved))
    except Exception:  # a program that does not compile for one lane: say nothing of lanes
        return None
    if one is None or one >= need:
        return None
    if one > free:
        return 0
    per_lane = (need - one) / (lanes - 1)
    return min(lanes - 1, 1 + int((free - one) // per_lane))


def lanes_advice(resolved: Resolved, fit: int) -> str:
    """``it fits at most N lanes; use --num-seeds K or fewer``: the seeds that fit with every
    point of the sweep, or, where not one seed of each does, the points that fit."""
    config = resolved.config
    points = len(resolved.lanes) // config.num_seeds
    text = f"it fits at most {fit:,} lane{'s' if fit != 1 else ''}"
    if fit >= points:
        sweep = f" (× the sweep's {points} points)" if points > 1 else ""
        return f"{text}; use --num-seeds {fit // points} or fewer{sweep}"
    return f"{text}; sweep at most {fit:,} point{'s' if fit != 1 else ''} with --num-seeds 1"


def compiled_need(resolved: Resolved) -> int | None:
    """The bytes ``resolved``'s run needs (its state, and its largest program's outputs and
    temporaries beyond it), from its programs compiled for the shapes ``init`` makes, without
    running any; ``None`` where XLA analyses none of them."""
    from jaxrl_fdg.profiling import Timings
    from jaxrl_fdg.run.build import build_loop

    config = resolved.config
    loop = build_loop(resolved)
    plan = resolved.placement.plan(config.fusion, loop, Timings("off"), config.boundary_every)
    shapes = jax.jit(loop.init).trace(resolved.placement.initial_key(resolved.request)).out_info
    plan.compile(shapes)
    needs = [needed_bytes(c) for c in plan.compiled_so_far.values()]
    needs = [n for n in needs if n is not None]
    return _bytes(shapes) + max(needs) if needs else None


def _one_lane(resolved: Resolved) -> Resolved:
    """The run of ``resolved``'s first lane alone, resolved."""
    from jaxrl_fdg.config import resolve

    config, lane = resolved.config, resolved.lanes[0]
    hparams = {**config.hparams, **lane.point}
    return resolve(config.replace(seed=lane.seed, num_seeds=1, hparams=hparams), resolved.spec)


def advice(resolved: Resolved, state: Any = None) -> str:
    """``reduce num_envs (…), …``: the settings a run's memory grows with, the one that weighs
    most first (a replay buffer's size, where the replay holds most of the state)."""
    config, hparams = resolved.config, resolved.hparams
    settings = [("num_envs", config.num_envs), ("rollout_len", config.rollout_len)]
    if config.num_seeds > 1:
        settings.append(("num_seeds", config.num_seeds))
    if len(resolved.lanes) > config.num_seeds:
        settings.append(("the sweep's points", len(resolved.lanes) // config.num_seeds))
    if config.eval_every:
        settings.append(("eval_episodes", config.eval_episodes))
    buffer = getattr(hparams, "buffer_size", None)
    if buffer is not None:
        replay = state is not None and _largest_fragment(state) == "replay"
        settings.insert(0 if replay else len(settings), ("buffer_size", buffer))
    network = _network_setting(resolved)
    if network is not None and network[2] > max(NETWORK_NAMED_BYTES, _rollout_bytes(resolved)):
        settings.insert(0, network[:2])  # the parameters weigh most
    named = [f"{name} ({_shown(value)})" for name, value in settings]
    return f"reduce {', '.join(named[:-1])} or {named[-1]}" if len(named) > 1 else named[0]


# Parameters (with their optimiser's moments) below this size are never the setting to reduce.
NETWORK_NAMED_BYTES = 10**9


def _network_setting(resolved: Resolved) -> tuple[str, Any, int] | None:
    """``(name, value, bytes)`` of the hyperparameter that sizes the networks (``hidden_sizes``)
    and about what its parameters and their optimiser moments take: 3 copies of float32
    weights between consecutive layers."""
    sizes = getattr(resolved.hparams, "hidden_sizes", None)
    if not isinstance(sizes, tuple | list) or not all(isinstance(n, int) for n in sizes):
        return None
    weights = sum(a * b for a, b in zip(sizes, sizes[1:], strict=False)) + sum(sizes)
    return "hidden_sizes", tuple(sizes), 3 * 4 * weights


def _rollout_bytes(resolved: Resolved) -> int:
    config = resolved.config
    observation = sum(
        math.prod(shape) for _, shape in spaces.leaves_shapes(resolved.context.observation_space)
    )
    return 4 * config.num_envs * config.rollout_len * max(1, observation) * len(resolved.lanes)


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(f"{v:,}" for v in value)
    return f"{value:,}"


def _largest_fragment(state: Any) -> str:
    sizes = {name: _bytes(s) for name, s in state.fragments.items()}
    return max(sizes, key=sizes.get) if sizes else ""


def _bytes(tree: Any) -> int:
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(tree) if hasattr(x, "dtype"))


def first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0][:200] if lines else type(error).__name__


def _size(n: float) -> str:
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"
