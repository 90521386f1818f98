"""Squall configuration: a typed registry of keys and layered resolution.

Precedence, lowest first: built-in defaults (``defaults.yaml``) < site files
(``squall.yaml``) < cluster config (``--config-path``) < topology config <
component config < ``--config-property KEY=VALUE``.
"""
from squall.conf.registry import ConfigError, ConfigKey, is_secret, masked, registry, unknown_key_warning
from squall.conf.resolve import (
    CLUSTER_LAYER,
    Config,
    base_config,
    load_yaml_file,
    parse_property,
)

__all__ = [
    "CLUSTER_LAYER",
    "Config",
    "ConfigError",
    "ConfigKey",
    "base_config",
    "is_secret",
    "load_yaml_file",
    "masked",
    "parse_property",
    "registry",
    "unknown_key_warning",
]
