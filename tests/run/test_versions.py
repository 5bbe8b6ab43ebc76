"""What a run ran under (``jaxrl_fdg.run.versions``): this process's versions and device, the
differences between two sets, and ``versions.json``, one entry per stretch of the run, added only
where the versions changed."""

import importlib.metadata
import json

import jax

from jaxrl_fdg.run import versions
from jaxrl_fdg.run.run_folder import RunFolder


def test_current_names_every_package_python_and_the_device():
    now = versions.current()
    assert set(now) == {*versions.PACKAGES, "python", "device", *versions.BIT_SETTINGS, "XLA_FLAGS"}
    assert now["jax"] == jax.__version__
    assert now["device"].startswith(f"{jax.devices()[0].platform}: ")
    assert now["jax_enable_x64"] == str(jax.config.jax_enable_x64)


def test_versions_read_from_the_metadata_header_are_the_ones_importlib_reads():
    from jaxrl_fdg.run.executables import LIBRARIES

    names = (*versions.PACKAGES, *LIBRARIES, "no-such-distribution")
    expected = {}
    for name in names:
        try:
            expected[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            expected[name] = "not installed"
    assert versions.installed(names) == expected
    assert expected["no-such-distribution"] == "not installed"


def test_the_users_code_is_recorded_by_the_digest_of_its_content(tmp_path):
    algo = tmp_path / "algo.py"
    algo.write_text("SPEC = None\n")
    first = versions.current({"algo": f"{algo}:SPEC", "env": "CartPole-v1"})
    assert first["algo code"].startswith("algo.py sha256:") and "env code" not in first
    moved = tmp_path / "moved.py"
    moved.write_text("SPEC = None\n")  # the same content elsewhere: the same digest
    same = versions.current({"algo": f"{moved}:SPEC"})["algo code"]
    assert same.split(" ")[1] == first["algo code"].split(" ")[1]
    algo.write_text("SPEC = 1\n")
    assert versions.current({"algo": f"{algo}:SPEC"})["algo code"] != first["algo code"]


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
