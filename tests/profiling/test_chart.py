"""profile.png: compile, run and device time in panels of their own, each title giving the share
of the run it explains, and no text or bar outside the picture."""

from jaxrl_fdg.profiling import chart

# A --profile trace run as summarize() reports it: compiling took 6x the run.
SUMMARY = {
    "mode": "trace",
    "programs": {
        "init": {"calls": 1, "dispatch_s": 0.001, "compile_s": 0.75, "device_s": 0.0},
        "scan": {"calls": 26, "dispatch_s": 0.025, "compile_s": 6.0, "device_s": 0.0},
    },
    "compile_s": 6.0,
    "run_s": 1.0,
    "dispatch_s": 0.026,
    "device_wait_s": 0.46,
    "d2h_s": 0.014,
    "host_bookkeeping_s": 0.45,
    "other_host_s": 0.0,
    "device_by_scope": {
        "device_exclusive_s": {"learner": 0.012, "actor": 0.006, "env": 0.004},
        "device_busy_s": 0.025,
        "window_s": 0.05,
    },
}


def _texts_inside(fig):
    """Every title, tick label and bar label lies inside the figure; every bar and bar label
    inside its axes."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    box = fig.bbox
    for ax in fig.axes:
        inside = ax.get_window_extent(renderer)
        for text in [ax.title, *ax.get_yticklabels(), *ax.texts]:
            extent = text.get_window_extent(renderer)
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1 + 0.5, text.get_text()
            assert box.y0 <= extent.y0 and extent.y1 <= box.y1 + 0.5, text.get_text()
        for text in ax.texts:
            assert text.get_window_extent(renderer).x1 <= inside.x1, text.get_text()
        for bar in ax.patches:
            assert bar.get_width() <= ax.get_xlim()[1]


def test_panels_say_what_share_of_the_run_they_explain():
    fig = chart.figure(SUMMARY, "ppo-CartPole-v1-scan-s0")
    compile_ax, run_ax, device_ax = fig.axes
    # 6 s of 7 s wall (compile + run); the run's parts 0.001 + 0.025 + 0.46 + 0.014 + 0.45 of 1 s.
    assert compile_ax.get_title() == "compile: 6.00 s\n86% of compile + run"
    assert run_ax.get_title() == "run: 1.00 s wall\nthese parts explain 95% of it"
    assert device_ax.get_title() == "device by fragment (traced window)\nbusy 25.0 of 50.0 ms (50%)"
    labels = [t.get_text() for t in run_ax.texts]
    assert "0.46 s (46%)" in labels and "0.45 s (45%)" in labels
    assert [t.get_text() for t in device_ax.texts][0] == "12 ms (48%)"  # of the busy time
    _texts_inside(fig)


def test_without_a_trace_there_is_no_device_panel(tmp_path):
    summary = {**SUMMARY, "mode": "sync", "device_by_scope": None}
    assert len(chart.figure(summary).axes) == 2
    path = chart.profile_chart(summary, tmp_path / "profile.png", title="r")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _texts_inside(chart.figure(summary, "r"))


def test_a_run_of_no_measured_time_draws(tmp_path):
    empty = {**SUMMARY, "run_s": 0.0, "compile_s": 0.0, "device_by_scope": None}
    empty["programs"] = {"scan": {"calls": 0, "dispatch_s": 0, "compile_s": 0, "device_s": 0}}
    fig = chart.figure(empty)
    assert fig.axes[1].get_title() == "run: no time measured"
    assert chart.profile_chart(empty, tmp_path / "p.png").is_file()


def test_sync_mode_shows_each_programs_device_time():
    programs = {
        "scan": {"calls": 4, "dispatch_s": 0.01, "compile_s": 1.0, "device_s": 0.3},
    }
    summary = {**SUMMARY, "mode": "sync", "programs": programs, "device_by_scope": None}
    labels = [t.get_text() for t in chart.figure(summary).axes[1].get_yticklabels()]
    # The wait at boundaries is what is left of device_wait_s after the programs' own waits.
    assert labels[:3] == ["dispatch: scan", "device: scan", "waiting on the device at boundaries"]
