"""benchmarks/time_to_result.py: the helpers that find a run's time to a return, and its table."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import page_tables  # noqa: E402
import pages  # noqa: E402
import time_to_result as ttr  # noqa: E402


def test_split_lines_keeps_a_line_still_being_written():
    lines, rest = ttr.split_lines(b'{"a": 1}\n{"a": 2}\n{"a"')
    assert lines == ['{"a": 1}', '{"a": 2}'] and rest == b'{"a"'
    lines, rest = ttr.split_lines(rest + b": 3}\n")
    assert lines == ['{"a": 3}'] and rest == b""


def test_tail_reads_each_complete_line_once(tmp_path):
    path = tmp_path / "metrics.jsonl"
    tail = ttr.Tail(path)
    assert tail.lines() == []  # not written yet
    path.write_bytes(b"one\ntw")
    assert tail.lines() == ["one"]
    with open(path, "ab") as f:
        f.write(b"o\nthree\n")
    assert tail.lines() == ["two", "three"] and tail.lines() == []


def test_first_over_skips_rows_without_episodes():
    rows = [
        {"step": 1, "episode_return": 300.0},
        {"step": 2, "episode_return": None},  # no episode ended in this window
        {"step": 3, "episode_return": 475.0},
        {"step": 4, "episode_return": 500.0},
    ]
    assert ttr.first_over(rows, 475.0)["step"] == 3
    assert ttr.first_over(rows[:2], 475.0) is None


def test_window_crossing_means_over_each_window():
    # windows of 2 iterations: (10 + 10) / 2 = 10; no episode; (30 + 50) / 2 = 40; 60 / 1
    ret_sum = [10.0, 10.0, 0.0, 0.0, 30.0, 50.0, 60.0]
    episodes = [1, 1, 0, 0, 1, 1, 1]
    assert ttr.window_crossing(ret_sum, episodes, 35.0, window=2) == 6
    assert ttr.window_crossing(ret_sum, episodes, 55.0, window=2) == 7  # the short last one
    assert ttr.window_crossing(ret_sum, episodes, 61.0, window=2) is None
    # one window of everything: 160 / 5 = 32
    assert ttr.window_crossing(ret_sum, episodes, 32.0, window=7) == 7


def test_interpolated_seconds():
    # compile ended 5 s after launch; 1,000 steps in 10 s, so step 250 came 2.5 s later
    assert ttr.interpolated_seconds(5.0, 10.0, 250, 1000) == 7.5


def test_median_counts_a_missed_run_as_beyond_the_budget():
    assert ttr.median_of([3.0, None, 1.0], 60.0) == {
        "median_s": 3.0,  # 1, 3, > 60: the middle one is known
        "lower_bound_s": None,
        "reached": 2,
    }
    assert ttr.median_of([None, 2.0, None], 60.0) == {
        "median_s": None,
        "lower_bound_s": 60.0,
        "reached": 1,
    }


def test_ratio_is_a_lower_bound_where_the_baseline_missed():
    ours = {"median_s": 10.0, "lower_bound_s": None}
    assert ttr.ratio({"median_s": 150.0, "lower_bound_s": None}, ours) == {
        "value": 15.0,
        "lower_bound": False,
    }
    assert ttr.ratio({"median_s": None, "lower_bound_s": 600.0}, ours) == {
        "value": 60.0,
        "lower_bound": True,
    }
    assert ttr.ratio({"median_s": 5.0}, {"median_s": None, "lower_bound_s": 600.0}) is None


def test_markers_and_progress():
    assert ttr.marker('TTR reached {"steps": 40960}') == ("reached", {"steps": 40960})
    assert ttr.marker("TTR compiled") == ("compiled", {})
    assert ttr.marker("Using cpu device") is None
    assert ttr.progress([(100, None), (200, -900.0), (300, -1000.0)]) == {
        "env_steps": 300,
        "best_return": -900.0,
    }
    assert ttr.progress([]) is None


def test_watch_stops_at_the_hit_or_the_budget(tmp_path):
    tail = ttr.Tail(tmp_path / "child.log")

    def reached(_elapsed):
        marks = [ttr.marker(line) for line in tail.lines()]
        return next((m for m in marks if m and m[0] == "reached"), None)

    hello = [sys.executable, "-c", "print('TTR reached {\"steps\": 7}', flush=True)"]
    watched = ttr.watch(hello, cwd=tmp_path, env=ttr._environ(), budget_s=30, check=reached)
    assert watched.hit == ("reached", {"steps": 7}) and watched.stop == "reached"
    assert 0 < watched.seconds < 30

    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    watched = ttr.watch(sleeper, cwd=tmp_path, env=ttr._environ(), budget_s=0.2, check=reached)
    assert watched.hit is None and watched.seconds is None and watched.stop == "wall budget"


def test_window_steps_are_our_rows():
    # PPO's defaults: 4 envs × 128 steps = 512 a iteration, 500,000 // 512 = 976 iterations,
    # a row every ceil(976 / 25) = 40 iterations: 20,480 env steps
    assert ttr.window_steps("cartpole") == 20_480


def test_tuned_rows_span_the_defaults_window():
    # ppo-cartpole.toml: 16 envs × 32 steps = 512 a iteration, as the defaults: 40 a window;
    # sac-pendulum.toml: 4 envs × 8 steps = 32 a iteration, 1,216 // 32 = 38
    assert ttr.tuned_log_every("cartpole") == 40
    assert ttr.tuned_log_every("pendulum") == 38
    assert ttr.window_steps("pendulum") == 1_216
    # ppo-minatar-breakout.toml: 64 envs × 128 steps = 8,192 an iteration, 40,960 // 8,192 = 5
    assert ttr.tuned_log_every("minatar") == 5


def test_minatars_file_holds_the_settings_of_its_defaults_row():
    import jaxrl_fdg as rl
    from jaxrl_fdg.config import files

    path = ttr.ROOT / ttr.TASKS["minatar"].tuned
    from_file = files.from_mapping(files.load(path), str(path))
    from_row = files.from_mapping(ttr.our_settings("minatar"), "our_settings")
    assert rl.resolve(from_file).config == rl.resolve(from_row).config


def test_ratios_and_ceilings_for_each_of_ours():
    def tool(median, starts=()):
        runs = [{"seconds": median, "start_s": s} for s in starts or (None,)]
        return {"runs": runs, "median_s": median, "lower_bound_s": None}

    tools = {
        "jaxrl-fdg": tool(10.0, (4.0, 5.0, 6.0)),
        "jaxrl-fdg-tuned": tool(5.0, (4.0, 4.0, 3.0)),
        "jaxrl-fdg-tuned-warm": {"skipped": "no tuned config file for this task"},
        "sbx": tool(30.0),
        "sb3": tool(60.0),
    }
    out = ttr.ratios(tools)
    assert out["sb3 / jaxrl-fdg"]["value"] == 6.0 and out["sbx / jaxrl-fdg-tuned"]["value"] == 6.0
    assert not any("warm" in k for k in out)
    # the medians of start_s: 5 s and 4 s
    assert ttr.ceilings(tools) == {
        "sb3 / jaxrl-fdg": 12.0,
        "sbx / jaxrl-fdg": 6.0,
        "sb3 / jaxrl-fdg-tuned": 15.0,
        "sbx / jaxrl-fdg-tuned": 7.5,
    }


def _report(tmp_path: Path) -> dict:
    def runs(*seconds):
        return [
            {"seed": i, "seconds": s, "env_steps": None if s is None else 1000 * (i + 1)}
            for i, s in enumerate(seconds)
        ]

    tools = {
        "jaxrl-fdg": {"runs": runs(9.0, 10.0, 11.0), "median_s": 10.0, "lower_bound_s": None},
        "jaxrl-fdg-tuned": {"runs": runs(4.0, 5.0, 6.0), "median_s": 5.0, "lower_bound_s": None},
        "handwritten": {"skipped": "no hand-written program for this task"},
        "sbx": {
            "settings": "PPO, an MLP",
            "runs": runs(20.0, 30.0, 40.0),
            "median_s": 30.0,
            "lower_bound_s": None,
        },
        "sb3": {"runs": runs(None, None, 500.0), "median_s": None, "lower_bound_s": 600.0},
    }
    results = {
        "minatar": {
            "env": "gymnax/Breakout-MinAtar",
            "threshold": 5.0,
            "tools": tools,
            "ratios": ttr.ratios(tools),
            "ceilings": {"sbx / jaxrl-fdg": 7.5},
        }
    }
    config = {
        "seeds": 3,
        "budget_s": 600.0,
        "goals": {"sb3 / jaxrl-fdg": 10.0, "sbx / jaxrl-fdg": 3.0},
        "venvs": {"sbx": {"ok": True, "versions": {"sbx-rl": "0.28.0"}}},
    }
    ttr.plot(results, 600.0, tmp_path / "time_to_result.png")
    return {"config": config, "results": results, "image": "time_to_result.png"}


def test_the_page_table_renders_every_tool(tmp_path):
    text = page_tables.time_to_result({"time_to_result.json": _report(tmp_path)})
    rows = {line.split(" | ")[1]: line for line in text.splitlines() if line.startswith("| ")}
    assert rows["jaxrl-fdg"].startswith("| gymnax/Breakout-MinAtar to 5 | jaxrl-fdg | 9.0, 10.0")
    assert rows["sbx"].endswith("| 3.0× · 6.0× | PPO, an MLP |")  # 30 / 10, 30 / 5
    assert "> budget, > budget, 500.0 | > 600 |" in rows["sb3"]
    assert "| ≥ 60.0× · ≥ 120.0× |" in rows["sb3"]  # its median is beyond the 600 s budget
    assert "median / ours (defaults · tuned · tuned, warm cache)" in text
    assert "gymnax/Breakout-MinAtar to 5: `sbx / jaxrl-fdg` 7.5×" in text
    assert "no hand-written program" in rows["handwritten"]
    assert "sbx: sbx-rl 0.28.0" in text and "](img/time_to_result.png)" in text
    assert (tmp_path / "time_to_result.png").stat().st_size > 0


def test_the_section_appears_once_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(pages, "RESULTS", tmp_path)
    assert "time_to_result.json" not in pages.covered()
    (tmp_path / "time_to_result.json").write_text("{}")
    assert "time_to_result.json" in pages.covered()
