"""The instance: the process that runs a task's spout or bolt.

One module a job:

| module | holds |
| --- | --- |
| ``state.py`` | ``InstanceState``: the state machine every role shares (plan, routes, batches, timers, metrics, frames in) |
| ``spout.py`` | ``SpoutInstance``: bursts of ``next_tuple``, backpressure, and at least once its trees |
| ``bolt.py`` | ``BoltInstance``: ``process`` over received frames at most once, ticks, ``consumed`` reports |
| ``reliable.py`` | ``ReliableBoltInstance``: at least once, spans, anchoring, acks and fails |
| ``emit.py`` | the hot path of every emit, written once (a generated fast ``emit``) |
| ``compiled.py`` | the per-tuple paths in C (``_emit.c``: the emit, the receive loop and the acks at least once), where built |
| ``chain.py`` | ``Chain``: the tasks of a chain in one process, driven as one instance |
| ``edge.py`` | ``Edge``: a tuple handed to the next chain member by call (one ``emit`` factory per mode) |
| ``checkpointing.py`` | ``Checkpointing``: a task's part in checkpoints (markers, alignment, saving, rollback) |
| ``sampling.py`` | ``Sampler``: tuple sampling, this task's ``emit``/``emit_many`` swapped for sampled ones while it is on |
| ``batch.py`` | ``Batch``: what is emitted and not yet sent, per destination task |
| ``tuples.py`` | the received tuple classes |
| ``make.py`` | ``make_instance``: the right class for a task |
| ``loop.py`` | the thin I/O loop and ``run``, the process's entry point |

Delivery (``topology.reliability.mode``): at most once, a bolt's
``ack``/``fail`` only count and a spout's are never called. At least once:
``spout.py`` and ``reliable.py``.
"""
from squall.runtime.instance.loop import run
from squall.runtime.instance.make import make_instance

__all__ = ["make_instance", "run"]
