"""The FileSink's pure rules: part names, when a part rolls, which parts a restore finishes or deletes.

A part file lives under three names (Flink's FileSink):

- *in progress* ``.part-<task>-<token>-<seq>.<ext>.inprogress``: being written, or closed by a roll and
  waiting for the next checkpoint (EFFECTIVELY_ONCE);
- *pending* ``.part-<task>-<token>-<seq>.<ext>.pending-<checkpoint>``: closed at ``pre_save`` of that
  checkpoint and recorded in the task's state for it;
- *finished* ``part-<task>-<token>-<seq>.<ext>``: visible, committed.

``<task>`` is the writer's task index, ``<token>`` a random token drawn at every start and rollback
(so a replay never reuses a name a finished part has) and ``<seq>`` counts the parts of that run. A
hidden name (leading ``.``) is skipped by Spark and Hadoop input formats. Every rename is idempotent:
the finished name is fixed by the pending one.
"""
from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence
from urllib.parse import quote

from squall.stateful import key_group, owned_groups

IN_PROGRESS = "inprogress"
PENDING = "pending"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

_NAME = re.compile(r"^\.(part-(\d+)-([0-9a-f]+)-(\d+)\.[a-z]+)\.(inprogress|pending-(\d+))$")


def new_token() -> str:
    return secrets.token_hex(4)


@dataclass(frozen=True)
class HiddenPart:
    """What a hidden part's name says."""

    folder: str  # relative folder ('' at the root)
    final: str  # its finished path, relative
    task: int
    checkpoint: Optional[int]  # None while in progress


def final_name(task: int, token: str, seq: int, ext: str) -> str:
    return f"part-{task:05d}-{token}-{seq:06d}.{ext}"


def in_progress_path(final: str) -> str:
    folder, _, name = final.rpartition("/")
    return f"{folder}/.{name}.{IN_PROGRESS}" if folder else f".{name}.{IN_PROGRESS}"


def pending_path(final: str, checkpoint_id: int) -> str:
    folder, _, name = final.rpartition("/")
    return f"{folder}/.{name}.{PENDING}-{checkpoint_id}" if folder else f".{name}.{PENDING}-{checkpoint_id}"


def parse_hidden(relpath: str) -> Optional[HiddenPart]:
    """The part a hidden in-progress or pending path names, or None for any other file."""
    folder, _, name = relpath.rpartition("/")
    m = _NAME.match(name)
    if not m:
        return None
    final = f"{folder}/{m.group(1)}" if folder else m.group(1)
    checkpoint = int(m.group(6)) if m.group(6) is not None else None
    return HiddenPart(folder, final, int(m.group(2)), checkpoint)


def partition_folder(fields: Sequence[str], values: Sequence[object]) -> str:
    """Hive-style ``field=value/...`` folders (values escaped as Hive does; None is Hive's null)."""
    return "/".join(f"{f}={HIVE_NULL if v is None else quote(str(v), safe=' ')}" for f, v in zip(fields, values))


# ------------------------------------------------------------------ roll policy
@dataclass(frozen=True)
class RollPolicy:
    """A part rolls (is closed and committed) once it holds ``max_bytes`` or is ``max_secs`` old."""

    max_bytes: float
    max_secs: float

    def due(self, size: float, opened_at: float, now: float) -> bool:
        return size >= self.max_bytes or now - opened_at >= self.max_secs


# ------------------------------------------------------------------ restore rules
#: state keys that carry the checkpoint a state was saved for: one per key group, so that every task
#: gets one back after a rescale (a task owns at least one group)
_MARKER = "__squall.files.checkpoint"


def marker_keys(groups: int) -> dict:
    """{key group: a state key in that group} for the checkpoint markers."""
    out: dict = {}
    i = 0
    while len(out) < groups:
        key = (_MARKER, i)
        out.setdefault(key_group(key, groups), key)
        i += 1
    return out


def is_marker(key: object) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and key[0] == _MARKER


def owned_markers(markers: Mapping[int, object], index: int, parallelism: int, groups: int) -> list:
    """The marker keys task ``index`` of ``parallelism`` saves: those of the groups it owns."""
    return [markers[g] for g in owned_groups(index, parallelism, groups)]


@dataclass(frozen=True)
class Cleanup:
    """What a task does with the sink's hidden files when it (re)starts from a checkpoint's state."""

    finish: list  # [(pending path, final path)] recorded in its state: rename
    delete: list  # garbage: in progress (replayed), or pending for a checkpoint that never completed


def restore_plan(state_pending: Mapping[str, Sequence], restored: int, hidden: Iterable[str],
                 index: int, parallelism: int) -> Cleanup:
    """The cleanup of task ``index`` of ``parallelism`` restored to checkpoint ``restored`` (0: none)
    with ``state_pending`` ({final: [checkpoint, pending path]}) from its state and the ``hidden``
    paths of the output directory.

    Each pending part in the state belongs to ``restored`` (complete): finish it. Other hidden parts are
    garbage when written by a task ``j`` with ``j % parallelism == index`` (every old task has one new
    owner, whatever the rescale): one in progress (its tuples are replayed after the checkpoint), or one
    pending for a checkpoint above ``restored`` (it never completed; the replay rewrites it). A pending
    part at or below ``restored`` that is not in this task's state is in another task's (a rescale moved
    it by key group) and is left to it.
    """
    finish = [(entry[1], final) for final, entry in sorted(state_pending.items())]
    mine = {entry[1] for entry in state_pending.values()}
    delete = []
    for path in hidden:
        part = parse_hidden(path)
        if part is None or path in mine or part.task % parallelism != index:
            continue
        if part.checkpoint is None or part.checkpoint > restored:
            delete.append(path)
    return Cleanup(finish, sorted(delete))
