"""``jaxrl-fdg profile``: one run under each of several fusion modes, and where the time goes in
each (compile, run, the host's share, the device's scopes, the roofline verdicts)."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from jaxrl_fdg import config as cfg
from jaxrl_fdg.cli.common import say
from jaxrl_fdg.errors import ConfigError
from jaxrl_fdg.run import signals, train

_PROFILE_ROWS = (
    ("compile s (wall)", lambda t: t["compile_s"]),
    # Programs compiled at the same time on worker threads overlap: this sum can exceed the wall.
    ("compile s (programs, summed)", lambda t: t["compile_programs_s"]),
    ("run s", lambda t: t["run_s"]),
    ("host: dispatch s", lambda t: t["dispatch_s"]),
    ("host: waiting on device s", lambda t: t["device_wait_s"]),
    ("host: device→host s", lambda t: t["d2h_s"]),
    ("host: bookkeeping s", lambda t: t["host_bookkeeping_s"]),
    ("timing layer cost s", lambda t: t["overhead_s"]),
)


def add_arguments(prof: argparse.ArgumentParser) -> None:
    prof.add_argument("--algo", default=cfg.TrainConfig.algo)
    prof.add_argument("--env", help="environment (default: the algorithm's)")
    prof.add_argument("--fusion", default="step,fragment,scan", help="comma-separated modes")
    prof.add_argument("--profile", default="trace", help="timing mode: host | sync | trace")
    prof.add_argument("--total-steps", type=int, default=51_200)
    prof.add_argument("--num-envs", type=int, help="environments (default: the algorithm's)")
    prof.add_argument("--rollout-len", type=int, help="rollout length (default: the algorithm's)")
    prof.add_argument("--seed", type=int, default=0)
    prof.add_argument("--out", default="runs", help="parent folder of the run folders")


def run(args: argparse.Namespace) -> int:
    modes = [m.strip() for m in args.fusion.split(",") if m.strip()]
    if not modes:
        raise ConfigError(f"--fusion {args.fusion!r} names no fusion mode")
    base = cfg.TrainConfig(
        algo=args.algo,
        env=args.env,
        total_steps=args.total_steps,
        num_envs=args.num_envs,
        rollout_len=args.rollout_len,
        seed=args.seed,
        out=args.out or None,
        progress=False,
        profile=args.profile,
    )
    # Every name and size is checked before anything compiles; each run is resolved once.
    runs = [cfg.resolve(base.replace(fusion=mode)) for mode in modes]
    if args.profile == "off":
        raise ConfigError("profile mode 'off' measures nothing (valid here: host, sync, trace)")
    results: dict[str, Any] = {}
    for resolved in runs:
        mode = resolved.config.fusion
        print(f"running {mode} ...", file=sys.stderr, flush=True)
        mark = signals.received()
        try:
            summary = train(resolved).summary
        except KeyboardInterrupt:  # stopped at once (while compiling, or a second signal)
            _say_stopped(signals.received_since(mark), mode, False, modes)
            raise
        if summary["status"] == "completed":
            results[mode] = summary
        signum = signals.received_since(mark)
        if signum is not None:  # asked to stop: the modes left are not run
            _say_stopped(signum, mode, mode in results, modes)
            if results:
                _print_table(results, list(results))
            return signals.exit_code(signum)
    _print_table(results, modes)
    return 0


def _say_stopped(signum: int | None, mode: str, completed: bool, modes: list[str]) -> None:
    """One line: the signal, whether the run under ``mode`` completed (in the table) or was cut
    short (left out of it; its folder resumes), and the modes not run."""
    name = "a stop signal" if signum is None else signal.Signals(signum).name
    how = "completed" if completed else "was cut short and is left out of the table"
    left = modes[modes.index(mode) + 1 :]
    rest = f"; not run: {', '.join(left)}" if left else ""
    say(f"profile: {name}: fusion {mode} {how}{rest}")


def _print_table(results: dict[str, Any], modes: list[str]) -> None:
    """One column per mode: the timing rows, the speed, the device's shares by scope, the
    verdicts and the device's busy fraction."""
    width = max(len(r[0]) for r in _PROFILE_ROWS) + 14
    print(f"{'':<{width}}" + "".join(f"{m:>12}" for m in modes))
    for label, get in _PROFILE_ROWS:
        print(f"{label:<{width}}" + "".join(f"{get(results[m]['timing']):>12.3f}" for m in modes))
    print(
        f"{'env-steps/s':<{width}}" + "".join(f"{results[m]['steps_per_s']:>12,.0f}" for m in modes)
    )
    scopes = sorted({k for r in results.values() for k in _device_shares(r)})
    for name in scopes:
        cells = "".join(f"{_device_shares(results[m]).get(name, 0.0):>11.0%} " for m in modes)
        print(f"{'device share: ' + name:<{width}}" + cells)
    _print_bound(results, modes, width)
    busy = [results[m]["timing"]["device_busy"] for m in modes]
    if any(b is not None for b in busy):
        print(
            f"{'device busy':<{width}}"
            + "".join(f"{'—' if b is None else format(b, '.0%'):>12}" for b in busy)
        )


def _print_bound(results: dict[str, Any], modes: list[str], width: int) -> None:
    """Each program's verdict (compute, memory, overhead) and the roofline time per iteration
    on an H100, per mode (``--profile sync`` or ``trace``: see jaxrl_fdg.profiling.bound)."""
    analyses = {m: results[m]["timing"].get("bound") or {} for m in modes}
    names = sorted({n for a in analyses.values() for n in a.get("programs", {})})
    for name in names:
        cells = "".join(
            f"{analyses[m].get('programs', {}).get(name, {}).get('bound', '—'):>12}" for m in modes
        )
        print(f"{'bound: ' + name:<{width}}" + cells)
    h100 = [analyses[m].get("h100_iteration_s") for m in modes]
    if any(v is not None for v in h100):
        print(
            f"{'H100 roofline ms/iteration':<{width}}"
            + "".join(f"{'—' if v is None else format(v * 1e3, '.4f'):>12}" for v in h100)
        )


def _device_shares(summary: dict[str, Any]) -> dict[str, float]:
    scoped = summary["timing"].get("device_by_scope")
    if not scoped:
        return {}
    total = sum(scoped["device_exclusive_s"].values()) or 1.0
    return {k: v / total for k, v in scoped["device_exclusive_s"].items()}
