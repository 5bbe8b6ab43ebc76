"""What a run ran under (``jaxrl_fdg.run.versions``): this process's versions and device, the
differences between two sets, and ``versions.json``, one entry per stretch of the run, added only
where the versions changed."""

import json

import jax

from jaxrl_fdg.run import versions
from jaxrl_fdg.run.run_folder import RunFolder


def test_current_names_every_package_python_and_the_device():
    now = versions.current()
    assert set(now) == {*versions.PACKAGES, "python", "device"}
    assert now["jax"] == jax.__version__
    assert now["device"].startswith(f"{jax.devices()[0].platform}: ")


def test_differences_name_each_changed_entry_the_saved_set_has():
    saved = {"jax": "0.10.1", "numpy": "2.0.0", "flax": "0.10.0", "gone": "1"}
    now = {"jax": "0.10.2", "numpy": "2.0.0", "flax": "0.10.0", "new": "2"}
    assert versions.differences(saved, now) == ["jax 0.10.1 -> 0.10.2"]
    assert (
        versions.note(saved, now)
        == " (versions changed since it was written: jax 0.10.1 -> 0.10.2)"
    )
    assert versions.note(None, now) == versions.note(now, now) == ""


def test_a_stretch_is_recorded_only_where_the_versions_change(tmp_path):
    folder = RunFolder(tmp_path)
    first, second = {"jax": "0.10.1"}, {"jax": "0.10.2"}
    versions.record(folder, 0, first)
    versions.record(folder, 4, first)  # a resume under the same versions: nothing new
    versions.record(folder, 8, second)
    assert versions.read(tmp_path) == [
        {"from_iteration": 0, "versions": first},
        {"from_iteration": 8, "versions": second},
    ]


def test_an_unreadable_or_foreign_file_reads_as_no_stretches(tmp_path):
    assert versions.read(tmp_path) == []  # none written yet
    (tmp_path / versions.FILE).write_text("{not json")
    assert versions.read(tmp_path) == []
    (tmp_path / versions.FILE).write_text(json.dumps([{"versions": {"jax": "1"}}, 3, {"x": 1}]))
    assert versions.read(tmp_path) == [{"versions": {"jax": "1"}}]
