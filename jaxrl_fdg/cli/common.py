"""What several commands share: the exit statuses and one-line messages of every command, the
flags of the run settings and of an algorithm's hyperparameters (built from the config schema),
and a config assembled from a config file and the flags given over it.

Bad input of any kind (a :class:`ConfigError`) exits with status 2 and a one-line message, never
a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import typing
from collections.abc import Callable, Iterable
from typing import Any

from jaxrl_fdg import config as cfg
from jaxrl_fdg import plugins, policies
from jaxrl_fdg.core import algorithm as algorithms
from jaxrl_fdg.errors import ConfigError, OutOfMemory, one_line
from jaxrl_fdg.policies import FUSION_MODES
from jaxrl_fdg.run import signals
from jaxrl_fdg.run.checkpoint import NonFiniteError, describe_nan

# The flags of `train`: every TrainConfig setting declared with a flag, by group, with the
# help line its field carries (config.schema.setting), plus the valid choices where they are
# known only here.
RUN_FLAGS = {
    f.name: f.metadata["help"] for f in dataclasses.fields(cfg.TrainConfig) if f.metadata["flag"]
}
_CHOICES = {
    "fusion": lambda: f"{' | '.join(FUSION_MODES)}, or auto (the fastest, measured)",
    "placement": lambda: (
        f"{' | '.join(policies.registered())}, or auto (the fastest this machine allows, measured)"
    ),
    "dp_backend": lambda: " | ".join(policies.DP_BACKENDS),
}
_TEXT_FLAGS = (
    "out",
    "run_name",
    "profile",
    "placement",
    "dp_backend",
    "coordinator",
    "pbt_perturb",
    "rank_metric",
)


def exit_status(command: Callable[[], int], as_command: bool, show_traceback: bool = False) -> int:
    """Run ``command`` under the stop signals' handler; returns its exit status, or the status
    of the error that stopped it, said in one line on stderr. An error raised in the user's
    own code (an algorithm or environment file a reference loaded) is one line naming the file,
    line and function, exit 2; ``show_traceback`` (``--traceback``) lets it through whole.

    Run as the command itself (``as_command``), a command that a signal stopped at once (a
    second Ctrl-C, a signal while compiling) ends the process here, once its files are written:
    exiting normally would wait for the device work or the compiles it abandoned."""
    try:
        with signals.Signals():  # SIGTERM and SIGHUP end a command as Ctrl-C does, at once
            return command()
    except ConfigError as e:  # from the user's code (every(0) in a build): where, too
        where = plugins.user_location(e)
        say(f"error: {e}" + (f" (in your code {where})" if where else ""))
        return 2
    except NonFiniteError as e:
        say(f"stopped: {e}")
        return 1
    except OutOfMemory as e:  # while training; the folder says failed and resumes
        say(f"error: {e}")
        return 1
    except FloatingPointError as e:  # --debug-nans: JAX raised at the op that made the NaN
        say(f"stopped: non-finite value: {describe_nan(e)}")
        return 1
    except OSError as e:  # a full disk, a permission lost while the run writes its folder
        where = f": {e.filename}" if e.filename else ""
        say(f"error: {e.strerror or e}{where}")
        if as_command:  # the folder is closed; what is left would only print its own failures
            _exit_quietly(1)
        return 1
    except Exception as e:  # the user's code raised: where, in one line; anything else is ours
        where = None if show_traceback else plugins.user_error(e)
        if where is None:
            raise
        say(f"error {where} (--traceback shows the whole traceback)")
        return 2
    except KeyboardInterrupt as e:  # a stop signal where the command could not stop cleanly
        return signals.interrupted(e, as_command)


def _exit_quietly(code: int) -> None:
    """End the process now, once its output is out: after a write failed, the threads orbax
    and tensorstore leave behind, and tensorboardX's exit handler, would each print a
    traceback of the same full disk (\"Event loop is closed\") as Python shuts down."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def say(message: str) -> None:
    """``jaxrl-fdg: <message>`` on stderr as one line: characters that are not printable (a
    line or record separator in a name read from a file) are written as escapes."""
    print(f"jaxrl-fdg: {one_line(message)}", file=sys.stderr)


def add_config_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="a run config: .toml, .yaml/.yml or .json")


def add_run_flags(
    parser: argparse.ArgumentParser,
    spec: algorithms.AlgorithmSpec,
    leave_out: Iterable[str] = (),
) -> None:
    """The run settings' flags, one argument group per group of settings (those named in
    ``leave_out`` left out)."""
    hints = typing.get_type_hints(cfg.TrainConfig)
    groups = {name: parser.add_argument_group(name) for name in cfg.GROUPS}
    for field in dataclasses.fields(cfg.TrainConfig):
        if not field.metadata["flag"] or field.name in leave_out:
            continue
        name = field.name
        kind = str if name in _TEXT_FLAGS else cfg.unoptional(hints[name])
        if name in cfg.RUN_DEFAULTS:
            default = f"{spec.defaults.get(name, cfg.RUN_DEFAULTS[name])}, {spec.name}'s"
        else:
            default = getattr(cfg.TrainConfig, name)
        choices = f": {_CHOICES[name]()}" if name in _CHOICES else ""
        groups[field.metadata["group"]].add_argument(
            flag(name),
            dest=name,
            type=kind,
            default=None,
            metavar=name.upper(),
            help=f"{field.metadata['help']}{choices} (default: {default})",
        )
    _add_switches(groups)


# The run flags that take no value (_add_switches).
SWITCHES = ("--no-progress", "--debug-nans", "--no-compile-cache")


def _add_switches(groups: dict[str, Any]) -> None:
    """The run flags that are no setting of their own name: ``--env-option`` and the
    switches."""
    groups[cfg.EXPERIMENT].add_argument(
        "--env-option",
        dest="env_option",
        action="append",
        metavar="KEY=VALUE",
        help="a keyword for the environment (repeatable), e.g. max_steps=200, or EnvPool's "
        "episodic_life=true; VALUE is read as a TOML value, else as text",
    )
    groups[cfg.BOOKKEEPING].add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        default=None,
        help="no live progress line",
    )
    groups[cfg.EXECUTION].add_argument(
        "--debug-nans",
        dest="debug_nans",
        action="store_true",
        default=None,
        help="JAX's NaN checks: raise at the op that first makes a NaN (slow)",
    )
    groups[cfg.EXECUTION].add_argument(
        "--no-compile-cache",
        dest="compile_cache",
        action="store_false",
        default=None,
        help="do not turn on JAX's persistent compilation cache (~/.cache/jaxrl_fdg/xla)",
    )


def add_hparam_flags(parser: argparse.ArgumentParser, spec: algorithms.AlgorithmSpec) -> None:
    """A flag for each of the algorithm's hyperparameters, in a group of their own; each one's
    value lands in ``hp.<name>``."""
    group = parser.add_argument_group(f"{spec.name} hyperparameters")
    for field in dataclasses.fields(spec.hparams):
        group.add_argument(
            flag(field.name),
            dest=f"hp.{field.name}",
            default=None,
            metavar="VALUE",
            help=" ".join(
                filter(None, [field.metadata.get("help"), f"(default: {default(field)})"])
            ),
        )


def read_config(path: str) -> tuple[dict[str, Any], str]:
    """A config file's settings and the algorithm they name, the file checked on its own first,
    so that its errors name the file."""
    data = cfg.load(path)
    return data, cfg.from_mapping(data, source=path).algo


def config_from(
    args: argparse.Namespace, data: dict[str, Any], skip: Iterable[str]
) -> cfg.TrainConfig:
    """The :class:`TrainConfig` of a config file's ``data`` with the flags given in ``args``
    over it (the flags named in ``skip`` are not settings); its errors name the command line."""
    skip = set(skip)
    given = {k: v for k, v in vars(args).items() if v is not None and k not in skip}
    hparams = dict(data.get("hparams", {}))
    hparams.update({k[3:]: v for k, v in given.items() if k.startswith("hp.")})
    options = dict(data.get("env_options", {}))
    options.update(env_options(given.pop("env_option", [])))
    merged = {**data, **{k: v for k, v in given.items() if not k.startswith("hp.")}}
    merged["hparams"] = hparams
    merged["env_options"] = options
    return cfg.from_mapping(merged, source="command line")


def env_options(pairs: list[str]) -> dict[str, Any]:
    """``--env-option KEY=VALUE`` pairs as a mapping; VALUE read as TOML (``200``, ``5.0``,
    ``true``, ``"text"``), else taken as text."""
    import tomllib

    options = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--env-option takes KEY=VALUE (e.g. max_steps=200), got {pair!r}")
        text = raw.strip()
        text = text.lower() if text.lower() in ("true", "false") else text
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        options[key.strip()] = value
    return options


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    return field.default_factory()  # type: ignore[misc]
