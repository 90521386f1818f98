"""Layered configuration: defaults, files, topology, component, command line."""
from __future__ import annotations

import functools
import os
from typing import Any, Iterable, Iterator, Mapping, Optional

import yaml

from squall.conf.registry import ConfigError, check_owned_key, registry

_HERE = os.path.dirname(os.path.abspath(__file__))
SITE_FILE = os.path.join(_HERE, "squall.yaml")
CLUSTER_LAYER = "cluster config"  # the layer's name in errors: the --config-path file, and the plan's copy of it


class Config(Mapping[str, Any]):
    """An immutable, fully resolved configuration.

    Holds every registered key (its default at least) plus any user keys.
    ``with_layer`` returns a new Config with a higher-precedence layer on top;
    known keys in a layer are type-checked, naming ``where`` they came from.
    """

    def __init__(self, values: Mapping[str, object]):
        self._values = dict(values)

    def with_layer(self, layer: Optional[Mapping[str, object]], where: str) -> "Config":
        if not layer:
            return self
        known = registry()
        values = dict(self._values)
        for name, value in layer.items():
            if not isinstance(name, str):
                raise ConfigError(f"{where}: config keys must be strings, got {name!r}")
            check_owned_key(name, where)
            values[name] = known[name].check(value, where) if name in known else value
        return Config(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Config({len(self._values)} keys)"


def load_yaml_file(path: str) -> dict:
    """Read a ``key: value`` YAML file; a missing or malformed file is a ConfigError."""
    try:
        with open(path) as f:
            data = yaml.safe_load(f)
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"config file {path} is not valid YAML: {e}") from e
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path}: expected a mapping of key: value")
    return data


def base_config(config_path: Optional[str] = None) -> Config:
    """Defaults < site file (``squall.yaml``) < cluster file (``config_path``, the cluster layer)."""
    config = site_config(SITE_FILE)
    if config_path:
        config = config.with_layer(load_yaml_file(config_path), f"{CLUSTER_LAYER} {config_path}")
    return config


@functools.lru_cache(maxsize=4)
def site_config(path: str) -> Config:
    """Defaults < the site file at ``path``: read once per process (a Config never changes), however many
    times a process resolves a topology's or a component's configuration."""
    config = Config({name: key.default for name, key in registry().items()})
    return config.with_layer(load_yaml_file(path), path)


def parse_property(text: str) -> tuple[str, Any]:
    """Parse ``KEY=VALUE`` from the command line; VALUE is read as YAML scalar."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--config-property {text!r}: expected KEY=VALUE")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def parse_properties(texts: Iterable[str]) -> dict:
    """Parse every ``KEY=VALUE`` of a command line, later ones winning."""
    return dict(parse_property(t) for t in texts)
