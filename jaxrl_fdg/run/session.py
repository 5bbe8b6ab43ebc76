"""A training session: the loop between host boundaries and its bookkeeping (metric rows,
progress, profiling, checkpoints, non-finite checks, stop requests)."""

from __future__ import annotations

import collections
import signal
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from jaxrl_fdg.config import TrainConfig
from jaxrl_fdg.core.evaluation import EVAL_OUTPUTS
from jaxrl_fdg.core.loop import iterations_done
from jaxrl_fdg.core.record import Loop
from jaxrl_fdg.core.types import LoopState
from jaxrl_fdg.profiling import Timings, bound, chart, scope_overhead, summarize, trace
from jaxrl_fdg.profiling.overheads import device_overheads
from jaxrl_fdg.profiling.timers import COMPILE_WAIT, user_scope_names
from jaxrl_fdg.run import metrics as metric_rows
from jaxrl_fdg.run.checkpoint import Checkpointer, NonFiniteError, check_metrics, find_non_finite
from jaxrl_fdg.run.lanes import LaneLog
from jaxrl_fdg.run.progress import ProgressDisplay
from jaxrl_fdg.run.run_folder import RunFolder
from jaxrl_fdg.run.signals import Signals, stop_message

TRACE_ITERATIONS = 2  # iterations inside the profiler window of ``--profile trace``
# Seconds one dispatch runs at most, about: a stop request waits for the piece running and the
# one queued behind it, then for the checkpoint.
STOP_WITHIN_S = 1.0


class Session:
    """The loop between host boundaries and its bookkeeping: metrics rows, progress, profiling,
    checkpoints, non-finite checks and stop requests."""

    def __init__(
        self,
        config: TrainConfig,
        label: str,
        plan,
        folder: RunFolder | None,
        checkpointer: Checkpointer | None = None,
        rows: list[dict[str, Any]] | None = None,
        evaluate: Callable[[LoopState, int], Any] | None = None,
        lanes: LaneLog | None = None,
        signals: Signals | None = None,
        agree: Callable[[int, int], tuple[int, int]] | None = None,
    ):
        self.config, self.plan, self.folder = config, plan, folder
        self.checkpointer = checkpointer
        self.evaluate = evaluate
        self.summary_extra: dict[str, Any] = {}  # more entries for summary.json
        self.lanes = lanes  # where each lane's own rows go (runs of several lanes)
        self.timings: Timings = plan.timings
        total = config.num_iterations * config.steps_per_iteration
        self.display = ProgressDisplay(total, label, enabled=config.progress)
        self.history: list[dict[str, np.ndarray]] = []
        self.rows: list[dict[str, Any]] = list(rows or [])
        self.iterations = self.rows[-1]["iteration"] if self.rows else 0
        # A resumed run's clock goes on from the last row kept: wall_s, run time and steps/s
        # cover every segment of the run, not only this one.
        self.elapsed_before = float(self.rows[-1]["wall_s"]) if self.rows else 0.0
        self.events: list[dict[str, Any]] = []
        self.first_iteration = self.iterations  # of this segment (a resumed run's checkpoint)
        self.traced_iterations = 0  # inside the profiler window of ``--profile trace``
        self.session = 0.0  # the profiler's own start, stop and export: excluded from run time
        self.status = "interrupted"
        self.stop_requested = False
        self.signal: int | None = None  # the stop signal that ended the run, if one did
        self.signals = signals or Signals()  # not entered: no handler, only its sections
        self.pace = Pace(STOP_WITHIN_S)
        # The processes of a run across processes dispatch the same pieces and stop together
        # (``policies.distributed.agree``); one process agrees with itself.
        self.agree = agree or (lambda size, signum: (size, signum))
        self._collected = 0.0  # when the last piece was read back
        self._pieces: list[dict[str, np.ndarray]] = []  # the metrics of a row not yet written
        self._in_flight: collections.deque[_Piece] = collections.deque()  # not yet read back
        self.start = self.last = time.perf_counter()
        if self.iterations:
            self.display.update(self.rows[-1])

    def execute(self, state: LoopState) -> LoopState:
        """Run from ``state`` to the end (or to where a stop request ends it) and checkpoint.

        Each chunk of ``boundary_every`` iterations (one metrics row) is dispatched in pieces
        that run for about :data:`STOP_WITHIN_S` each at most (:class:`Pace`), so that a stop
        request waits for seconds, not for a long chunk: where it lands between two pieces, the
        row covers the iterations done and the checkpoint holds their state. Pieces never change
        what is computed (every plan advances the same iterations however they are grouped)."""
        config = self.config
        start = iterations_done(state)
        self.iterations = self.first_iteration = start
        chunks = _chunks(start, config.num_iterations, config.boundary_every)
        traced = None
        if config.profile == "trace" and chunks:
            chunks, traced = _split_for_trace(chunks, TRACE_ITERATIONS)
        every = _in_iterations(config.checkpoint_every, config.steps_per_iteration)
        saved = end = start
        for i, n in enumerate(chunks):
            if i == traced:  # the profiler window holds this chunk alone
                self._record_in_flight()
                state = self.traced(state, n)
                end += n
                continue
            evaluate_at = end + n if self._evaluates_after(end, n, i == len(chunks) - 1) else None
            state, done = self._advance_chunk(state, n, evaluate_at)
            end += done
            if done < n:  # stopped between two pieces
                self._end_row_early()
                break
            if every and end // every > saved // every:
                self._record_in_flight()  # metrics up to the saved state are checked first
                saved = self.checkpoint(state)
        self._record_in_flight()
        with self.timings.scope("collect"):
            self.timings.wait(state)
        if self.checkpointer is not None:  # the final state (or where a stop request left it)
            self.checkpoint(state)
        if self.iterations == config.num_iterations:  # a stop request came after the last one
            self.status, self.signal = "completed", None
        return state

    def _advance_chunk(
        self, state: LoopState, n: int, evaluate_at: int | None
    ) -> tuple[LoopState, int]:
        """Dispatch a chunk of ``n`` iterations in pieces (:class:`Pace`) and the evaluation at
        iteration ``evaluate_at`` (if any) behind its last; return the state and the iterations
        dispatched, fewer than ``n`` where a stop request came between two pieces.

        One piece stays queued behind the one being read, so the device never idles while the
        host reads metrics and logs: piece k+1 is dispatched before piece k is collected."""
        done = 0
        while done < n:
            if self.pace.per_iteration is None:  # measure one piece before sizing the next
                self._record_in_flight()
            k, signum = self.agree(self.pace.size(n - done), self.signal or 0)
            if signum:  # a stop request, here or in another process of the run
                self.stop_requested, self.signal = True, self.signal or signum
                break
            dispatched = time.perf_counter()
            state, pending = self.plan.advance(state, k)
            done += k
            piece = _Piece(pending, None, k, done == n, dispatched)
            if done == n and evaluate_at is not None:  # dispatched behind it, not awaited
                piece = piece._replace(evaluation=self.evaluate(state, evaluate_at))
            self._in_flight.append(piece)
            if len(self._in_flight) > 1:
                self.record(self._in_flight.popleft())
        return state, done

    def _evaluates_after(self, end: int, n: int, last: bool) -> bool:
        """Whether the chunk of ``n`` iterations after iteration ``end`` ends with an
        evaluation: it crosses a multiple of ``eval_every`` (in iterations), or ends the run."""
        every = _in_iterations(self.config.eval_every, self.config.steps_per_iteration)
        return bool(every) and ((end + n) // every > end // every or last)

    def _end_row_early(self) -> None:
        """Stopped between two pieces: the last one dispatched ends its row (written now, if it
        was read back already)."""
        if self._in_flight:
            self._in_flight[-1] = self._in_flight[-1]._replace(ends_row=True)
        elif self._pieces:
            self._write_row(time.perf_counter(), None)

    def _record_in_flight(self) -> None:
        """Read back every piece dispatched and not yet read, oldest first."""
        while self._in_flight:
            self.record(self._in_flight.popleft())

    def request_stop(self, signum: int) -> None:
        """A stop signal's request: stop at the next safe point (between two pieces)."""
        self.stop_requested, self.signal = True, signum
        stop_message(signum)

    def checkpoint(self, state: LoopState) -> int:
        """Save ``state`` unless a fragment's state holds NaN or inf (then raise, keeping the last
        good checkpoint). Waits for the device; charged to the ``checkpoint`` scope."""
        with self.timings.scope("checkpoint"):
            bad = find_non_finite(state)
            if bad is not None:
                raise NonFiniteError(
                    f"non-finite values in {bad} at iteration {iterations_done(state)}; "
                    "the last checkpoint is intact"
                )
            return self.checkpointer.save(state) if self.checkpointer else iterations_done(state)

    def traced(self, state: LoopState, n: int) -> LoopState:
        """Advance ``n`` iterations inside a profiler window; its own cost goes to ``session``."""
        opened = time.perf_counter()
        with trace.capture() as self.events:
            window = time.perf_counter()
            self.timings.annotating = True
            dispatched = time.perf_counter()
            state, pending = self.plan.advance(state, n)
            self.record(_Piece(pending, None, n, True, dispatched))
            self.timings.annotating = False
            self.traced_iterations = n
            window = time.perf_counter() - window
        self.session += time.perf_counter() - opened - window
        return state

    def record(self, piece: _Piece) -> None:
        """Read one piece's metrics (and evaluation, if any) back, waiting for them; log a row
        once its chunk's last piece is in."""
        with self.timings.scope("collect"):
            metrics = self.plan.collect(piece.pending)
            evaluation = piece.evaluation
            if evaluation is not None:
                evaluation = self.timings.device_get(evaluation)
        now = time.perf_counter()
        self.pace.measured(piece.iterations, now - max(self._collected, piece.dispatched))
        self._collected = now
        with self.timings.scope("log"):
            for key, values in metrics.items():
                source = "env" if key in metric_rows.EPISODE_KEYS else "learner"
                check_metrics({key: values}, self.iterations, source)
            self.history.append(metrics)
            self.iterations += metric_rows.length(metrics)
            self._pieces.append(metrics)
        if piece.ends_row:
            self._write_row(now, evaluation)

    def _write_row(self, now: float, evaluation: dict | None) -> None:
        """The row of the pieces read back since the last one (and the evaluation behind them)."""
        with self.timings.scope("log"):
            metrics, self._pieces = metric_rows.concat(self._pieces), []
            wall = self.elapsed_before + now - self.start
            row = metric_rows.row(metrics, self.iterations, self.config, wall, now - self.last)
            if self.evaluate is not None:  # every row has the columns, for metrics.csv
                row.update({k: None for k in EVAL_OUTPUTS})
                row.update({k: float(np.mean(v)) for k, v in (evaluation or {}).items()})
            with self.signals.critical():  # a row in every file, or in none
                self._lane_rows(metrics, evaluation, now)
                self.last = now
                self.rows.append(row)
                if self.folder is not None:
                    self.folder.append_metrics(row)
            self.display.update(row)

    def _lane_rows(self, metrics: dict, evaluation: dict | None, now: float) -> None:
        """Each lane's own row (runs of several seeds or sweep points)."""
        if self.lanes is None:
            return
        rows = []
        for i in range(next(iter(metrics.values())).shape[1]):
            lane_row = metric_rows.row(
                {k: v[:, i] for k, v in metrics.items()},
                self.iterations,
                self.config,
                self.elapsed_before + now - self.start,
                now - self.last,
            )
            if self.evaluate is not None:
                lane_row.update({k: None for k in EVAL_OUTPUTS})
                lane_row.update({k: float(v[i]) for k, v in (evaluation or {}).items()})
            rows.append(lane_row)
        self.lanes.append(rows)

    def finish(self, loop: Loop) -> dict[str, Any]:
        """Close progress, attribute any trace, summarise, write the run folder's files."""
        waited = self.timings.scopes.get(COMPILE_WAIT)  # for programs compiling behind the run
        compiling = waited.wall if waited else 0.0
        run_seconds = time.perf_counter() - self.start - self.session - compiling
        self.display.close()
        attribution, events = None, self.events
        if events:
            scopes = {f.name for f in loop.graph.fragments} | user_scope_names()
            programs = [c.as_text() for c in self.plan.compiled.values()]
            costs = device_overheads()  # the profiler's own cost per event is taken off
            tracer_s = costs.tracer_s if costs is not None else 0.0
            attribution, events = trace.attribute(events, programs, scopes, tracer_s)
        overhead = scope_overhead(self.timings.mode) if self.timings.enabled else 0.0
        timing = summarize(self.timings, run_seconds, overhead=overhead, attribution=attribution)
        timing["profiler_session_s"] = self.session
        if self.timings.mode in bound.MODES:  # the modes that measure each program's device time
            timing["bound"] = bound.of_run(
                self.plan.compiled,
                timing,
                iterations=self.iterations - self.first_iteration,
                per_iteration=getattr(self.plan, "per_iteration", frozenset()),
                attribution=attribution,
                traced_iterations=self.traced_iterations,
            )
        summary = metric_rows.summary(
            self.config, self.status, self.rows, timing, self.elapsed_before, self.iterations
        )
        summary["executables"] = self.plan.executables
        summary.update(self.summary_extra)
        if "agents" in summary:  # env_steps counts games; each of their agents took a step
            summary["agent_steps"] = summary["env_steps"] * summary["agents"]
        if self.signal is not None and self.status == "interrupted":
            summary["signal"] = signal.Signals(self.signal).name
        if self.folder is not None:
            # The summary is written last, so that its status covers the files before it.
            try:
                write_profile(self.folder, self.config, self.timings, timing, events)
            except OSError:
                summary["status"] = self.status = "failed"
                self.folder.write_summary(summary)
                raise
            self.folder.write_summary(summary)
            self.folder.close()
        return summary


def write_profile(folder: RunFolder, config: TrainConfig, timings, timing, events) -> None:
    if not timings.enabled:
        return
    folder.write_json("profile.json", {**timing, "scopes": timings.as_dict()})
    if events:
        trace.write_trace(folder.path / "trace.json.gz", events)
    if config.profile in ("sync", "trace"):
        chart.stacked_bars(timing, folder.path / "profile.png", title=folder.path.name)


def _in_iterations(steps: int, steps_per_iteration: int) -> int:
    """A period of ``steps`` env steps in iterations, rounded up (0: never)."""
    return -(-steps // steps_per_iteration)


def _split_for_trace(chunks: list[int], size: int) -> tuple[list[int], int]:
    """Carve a chunk of ``size`` iterations out of the run's middle (the chunk holding its middle
    iteration, from that iteration on, or where the chunk ends first from ``size`` before its
    end), so the profiler window is short, follows a warm-up, and sees the run's steady state:
    an off-policy learner that starts after ``learning_starts`` steps is learning by then, where
    the run's start may still be filling the buffer. Boundaries never change results."""
    middle, i, before = sum(chunks) // 2, 0, 0
    while before + chunks[i] <= middle and i < len(chunks) - 1:
        before += chunks[i]
        i += 1
    n = min(size, chunks[i])
    lead = min(middle - before, chunks[i] - n)
    pieces = [p for p in (lead, n, chunks[i] - lead - n) if p]
    return chunks[:i] + pieces + chunks[i + 1 :], i + (lead > 0)


def _chunks(start: int, stop: int, size: int) -> list[int]:
    """Chunks of ``size`` iterations from ``start`` to ``stop``, on the grid of multiples of
    ``size``: a run resumed from a stop between two rows logs its next row where the
    uninterrupted run does."""
    ends = [*range((start // size + 1) * size, stop, size), stop] if start < stop else []
    return [b - a for a, b in zip([start, *ends], ends, strict=False)]


class _Piece(NamedTuple):
    """Iterations dispatched in one call (:meth:`Plan.advance`), not yet read back."""

    pending: Any  # the plan's metrics, still on the device
    evaluation: Any  # the evaluation dispatched behind it, if any
    iterations: int
    ends_row: bool  # the last piece of its chunk: its row is written once it is read
    dispatched: float  # perf_counter() when it was dispatched


class Pace:
    """How many iterations one dispatch may hold so that it runs for about ``seconds`` at most,
    from the last piece measured (seconds per iteration); one iteration until one is."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.per_iteration: float | None = None

    def size(self, left: int) -> int:
        if self.per_iteration is None:
            return 1
        return max(1, min(left, int(self.seconds / max(self.per_iteration, 1e-9))))

    def measured(self, iterations: int, seconds: float) -> None:
        self.per_iteration = seconds / iterations
