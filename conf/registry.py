"""The typed registry of every configuration key, read from ``defaults.yaml``."""
from __future__ import annotations

import difflib
import functools
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional

import yaml

_HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULTS_FILE = os.path.join(_HERE, "defaults.yaml")

_TYPES = ("int", "float", "bool", "str", "choice")
# Namespaces Squall owns: an unknown key there is almost certainly a typo.
RESERVED_PREFIXES = ("topology.", "squall.")


class ConfigError(ValueError):
    """A configuration key or value that Squall cannot accept."""


@dataclass(frozen=True)
class ConfigKey:
    """One known key: its type, default, bounds and a one-line doc."""

    name: str
    type: str
    default: object
    doc: str
    nullable: bool = False
    choices: Optional[tuple] = None
    min: Optional[float] = None
    max: Optional[float] = None
    secret: bool = False  # a credential: never copied into a plan or printed

    def check(self, value: object, where: str = "") -> Any:
        """Return ``value`` if it is valid for this key, else raise ConfigError.

        Ints are accepted where floats are expected (and returned as floats);
        nothing else is coerced: ``"10"`` is not an int.
        """
        at = f" ({where})" if where else ""
        if value is None:
            if self.nullable:
                return None
            raise ConfigError(f"{self.name}{at}: a value is required, got null")
        if self.type == "bool":
            if not isinstance(value, bool):
                raise ConfigError(self._expected("true or false", value, at))
            return value
        if self.type == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(self._expected("an integer", value, at))
        elif self.type == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(self._expected("a number", value, at))
            value = float(value)
        elif self.type == "str":
            if not isinstance(value, str):
                raise ConfigError(self._expected("a string", value, at))
        elif self.type == "choice":
            if isinstance(value, bool) and ("on" if value else "off") in self.choices:
                value = "on" if value else "off"  # YAML reads a bare off/on (a file, --config-property) as a bool
            if value not in self.choices:
                choices = ", ".join(map(str, self.choices))
                raise ConfigError(self._expected(f"one of {choices}", value, at))
        if self.min is not None and value < self.min:
            raise ConfigError(f"{self.name}{at}: must be >= {self.min:g}, got {value!r}")
        if self.max is not None and value > self.max:
            raise ConfigError(f"{self.name}{at}: must be <= {self.max:g}, got {value!r}")
        return value

    def _expected(self, what: str, value: object, at: str) -> str:
        return f"{self.name}{at}: expected {what}, got {value!r} ({type(value).__name__})"


def _parse_entry(name: str, entry: Mapping[str, object]) -> ConfigKey:
    unknown = set(entry) - {"type", "default", "doc", "nullable", "choices", "min", "max", "secret"}
    if unknown or entry.get("type") not in _TYPES or "doc" not in entry:
        raise ConfigError(f"{DEFAULTS_FILE}: bad registry entry {name!r}")
    key = ConfigKey(
        name=name,
        type=entry["type"],
        default=entry.get("default"),
        doc=entry["doc"],
        nullable=bool(entry.get("nullable", False)),
        choices=tuple(entry["choices"]) if "choices" in entry else None,
        min=entry.get("min"),
        max=entry.get("max"),
        secret=bool(entry.get("secret", False)),
    )
    key.check(key.default, "built-in default")
    return key


#: the parts of a key that name a credential in a connector's pass-through properties (librdkafka's
#: ``sasl.password``, ``ssl.key.password``, ``sasl.jaas.config``, ``sasl.oauthbearer.client.secret``, ...)
_CREDENTIAL_PARTS = ("password", "secret", "jaas", "token", "credential", "key.pem", "keystore.pem")


def is_secret(name: str) -> bool:
    """A key whose value is a credential, masked wherever configuration is shown: a registered secret
    key, or any key (a connector's ``kafka.consumer.sasl.password``) that names a credential."""
    known = registry().get(name)
    if known is not None:
        return known.secret
    lowered = name.lower()
    return any(part in lowered for part in _CREDENTIAL_PARTS)


def masked(config: Mapping[str, object]) -> dict:
    """``config`` with every credential's value shown as ``***``."""
    return {k: ("***" if is_secret(k) else v) for k, v in config.items()}


@functools.lru_cache(maxsize=1)
def registry() -> Mapping[str, ConfigKey]:
    """Every known key by name, in the order of ``defaults.yaml``."""
    with open(DEFAULTS_FILE) as f:  # libyaml's loader where PyYAML has it: a tenth of the pure one's time
        entries = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return {name: _parse_entry(name, entry) for name, entry in entries.items()}


def nearest_key(name: str) -> Optional[str]:
    """The known key ``name`` is most likely a typo of, if any."""
    close = difflib.get_close_matches(name, list(registry()), n=1, cutoff=0.6)
    return close[0] if close else None


def check_owned_key(name: str, where: str) -> None:
    """Refuse an unknown key in Squall's own ``squall.*`` namespace (a typo, or a key this version does not
    have), naming the nearest known one: read as a user key, it would be silently ignored."""
    if name.startswith("squall.") and name not in registry():
        near = nearest_key(name)
        hint = f"; did you mean {near!r}?" if near else " (see `squall config list`)"
        raise ConfigError(f"{where}: unknown config key {name!r}{hint}")


def unknown_key_warning(name: str) -> Optional[str]:
    """A warning for a key Squall does not know, or None when it is fine.

    Keys in Squall's own namespaces are warned about always; other keys are
    free for user components and only warned about when they look like a typo.
    """
    known = registry()
    if name in known:
        return None
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    if close:
        return f"unknown config key {name!r}; did you mean {close[0]!r}?"
    if name.startswith(RESERVED_PREFIXES):
        return f"unknown config key {name!r} (see `squall config list`)"
    return None
