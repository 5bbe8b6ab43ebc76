"""``jaxrl-fdg profile``: one run per fusion mode and the table of where the time went."""

import types

from jaxrl_fdg.cli import main, profile


def test_profile_without_a_fusion_mode_exits_2(capsys):
    assert main(["profile", "--fusion", ","]) == 2
    assert "names no fusion mode" in capsys.readouterr().err


def test_profile_prints_a_column_per_mode(monkeypatch, capsys):
    timing = {
        "compile_s": 1.0,
        "compile_programs_s": 2.0,
        "run_s": 3.0,
        "dispatch_s": 0.5,
        "device_wait_s": 0.25,
        "d2h_s": 0.125,
        "host_bookkeeping_s": 0.0625,
        "overhead_s": 0.01,
        "device_busy": 0.5,
        "device_by_scope": {"device_exclusive_s": {"actor": 1.0, "learner": 3.0}},
    }
    trained = []

    def train(resolved):
        trained.append(resolved.config.fusion)
        return types.SimpleNamespace(
            summary={"status": "completed", "timing": timing, "steps_per_s": 12345.4}
        )

    monkeypatch.setattr(profile, "train", train)
    assert main(["profile", "--fusion", "step, scan", "--out", ""]) == 0
    out, err = capsys.readouterr()
    assert trained == ["step", "scan"]
    assert err == "running step ...\nrunning scan ...\n"
    rows = {line[:42].strip(): line[42:].split() for line in out.splitlines()}
    assert rows[""] == ["step", "scan"]
    assert rows["run s"] == ["3.000", "3.000"]
    assert rows["host: device→host s"] == ["0.125", "0.125"]
    assert rows["env-steps/s"] == ["12,345", "12,345"]
    # Exclusive device time 1 s of 1 + 3: 25%.
    assert rows["device share: actor"] == ["25%", "25%"]
    assert rows["device share: learner"] == ["75%", "75%"]
    assert rows["device busy"] == ["50%", "50%"]
