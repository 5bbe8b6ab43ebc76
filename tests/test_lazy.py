"""lazy.names: a package's names loaded on first use, its subpackages reached as attributes."""

import types

import pytest

from jaxrl_fdg import lazy


def test_a_name_loads_from_its_module_once_and_a_subpackage_is_reached_by_attribute():
    namespace: dict = {}
    getattr_, dir_ = lazy.names("jaxrl_fdg", {"ConfigError": "jaxrl_fdg.errors"}, namespace)
    from jaxrl_fdg.errors import ConfigError

    assert getattr_("ConfigError") is ConfigError and namespace["ConfigError"] is ConfigError
    assert isinstance(getattr_("config"), types.ModuleType)  # jaxrl_fdg.config, imported
    assert dir_() == ["ConfigError"]
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        getattr_("nothing")
