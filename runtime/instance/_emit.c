/* The per-tuple paths in C: the emit (``emit.fast_emit``, a call without a Python frame), a bolt's receive
   loop (at most once ``process_rows``, at least once ``AutoAckedLoop``), a spout's acks (``ack_all``), and
   ``emit_many``'s cut of a list by key (``cut_rows``), below.

   ``CompiledEmit(routes, batches, emits, send, append, fallback, stream, batch_type, ...)`` is set on a
   task's runtime class as ``emit`` (``emit.runtime_class``, outside a chain). It binds as a function
   does (the component comes first), and handles the call every word count makes, ``self.emit(values)``:
   the default stream's ``FastRoute`` (``routes``: ``inst.fast_routes``), the values' batch (a fields
   grouping's known key, its ``key_miss``, a value-free ``next_task`` or the chooser), the values put
   into the batch and the batch sent when full, as ``fast_emit``'s ``emit`` does line for line:
   - at most once (no ``inst``): appended to the batch's open run;
   - at least once, a bolt's (``inst``, ``auto_anchor``): anchored to ``inst.anchor_span or
     inst.anchor()``, appended to the open span when that is the anchor's, else in a new span taking a
     share of the anchor's value (``Batch.join``'s, inlined as ``fast_emit`` inlines it; through
     ``Batch.join`` for a new run). Under ``auto_ack`` (``span_type``, ``idle``, ``bits``) ``inst.anchor()``
     runs here too, its ``Span`` made without a Python frame. A spout's ``self.emit(values)`` likewise,
     anchored to nothing;
   - at least once, a spout's ``self.emit(values, tup_id)`` (positional or keyword; ``trees`` and the
     rest): a tree of its own, opened in ``inst.tracker.trees``, and a span of its own in the batch.
   Every other call (more arguments or other keywords, a stream without a fast route, the wrong
   number of values) goes to ``fallback``, the Python ``emit`` with the same signature.

   A ``Batch``'s slots (``stream``, ``vals``, ``limit``, ``targets``, ``spans``, ``anchor``), a ``Span``'s and
   a received tuple's are read at their offsets in the object, as CPython's own attribute
   specialisation reads a slot, where the object is exactly of the type given; by name otherwise.

   Pure Python stays the reference: ``compiled.py`` hands these out only when the extension was built
   (``setup.py``: optional) and ``SQUALL_PURE_PYTHON`` is not set. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

enum { STREAM, VALS, LIMIT, TARGETS, SPANS, ANCHOR, SLOTS, TUP_ID = SLOTS, NAMES };
enum { ROOTS, VALUE, DELTA, CARRIED, AT, OPEN, FAILED, SPAN_SLOTS };  /* Span's slots */
enum { UNTRACKED, ANCHORED, SPOUT };  /* at most once; a tracked bolt's (or a spout's emit without an id); a spout's */
enum { CURRENT, SPAN, SPAN_ROOTS, SPAN_VALUE, ANCHOR_SPAN, INST_ATTRS };  /* a reliable bolt's per-tuple attributes */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *routes;   /* dict: stream -> FastRoute (fields, key_index, key_batches, key_miss, next_task, choose) */
    PyObject *batches;  /* dict: task -> Batch */
    PyObject *emits;    /* list [emits since the last metrics bucket] */
    PyObject *send;     /* inst.send_batch(batch) */
    PyObject *append;   /* inst.append(batch, stream, values) */
    PyObject *fallback; /* the Python emit(component, values, ...) */
    PyObject *stream;   /* the default stream's name */
    PyObject *batch_type;
    Py_ssize_t offsets[SLOTS]; /* of batch_type's slots in its objects; -1: read by name */
    int mode;           /* UNTRACKED, ANCHORED or SPOUT */
    /* at least once (NULL at most once) */
    PyObject *inst;     /* the InstanceState: a bolt's anchor (inst.anchor_span or inst.anchor()), a spout's
                           inst.complete and inst.tracker.open_root */
    int auto_anchor;    /* a bolt that anchors its emits to the tuple being processed */
    PyObject *task_id;
    /* a spout's trees (NULL otherwise): fast_emit's tracked spout path */
    PyObject *trees;    /* inst.tracker.trees: root -> [tup_id, xor, emitted at] */
    PyObject *bits;     /* random_bits(n) */
    PyObject *clock;    /* time.monotonic() */
    PyObject *task_bits;  /* the task id above a root's random bits */
    PyObject *root_bits;  /* ROOT_BITS */
    int in_words;         /* task_bits and root_bits fit C words (as_word): a root is made in them */
    unsigned long task_word, root_word;
    PyObject *no_anchor;  /* NO_ANCHOR */
    /* a bolt's anchored emit under auto_ack (NULL otherwise): ``inst.anchor()`` and ``Batch.join`` in C */
    PyObject *span_type;  /* Span */
    PyObject *idle;       /* IDLE: ``inst.current`` outside process() */
    Py_ssize_t span_offsets[SPAN_SLOTS];  /* of span_type's slots; -1: read by name */
    int spans_made_here;  /* every slot of span_type has an offset: make_span fills them */
    Py_ssize_t inst_offsets[INST_ATTRS];  /* of inst's per-tuple attributes (inst_offsets_of) */
} CompiledEmit;

static PyObject *slot_names[NAMES];  /* the Batch slots', then tup_id */
static PyObject *span_names[SPAN_SLOTS];
static PyObject *str_anchor, *str_join, *str_open_run, *str_complete, *str_tracker, *str_open_root;
static PyObject *sixty_four, *zero_seconds, *zero;

/* obj.<name>, read at ``offset`` in the object (-1: by name); a new reference, or NULL with the error set */
static PyObject *get_at(PyObject *obj, Py_ssize_t offset, PyObject *name) {
    if (offset >= 0) {
        PyObject *value = *(PyObject **)((char *)obj + offset);
        if (value) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(obj, name);
}

/* obj.<name> = value, at ``offset`` (-1: by name) */
static int set_at(PyObject *obj, Py_ssize_t offset, PyObject *name, PyObject *value) {
    if (offset >= 0) {
        PyObject **at = (PyObject **)((char *)obj + offset);
        PyObject *old = *at;
        Py_INCREF(value);
        *at = value;
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_SetAttr(obj, name, value);
}

/* The offset of ``obj``'s slot ``slot`` when ``obj`` is exactly ``type`` (whose slots are at ``offsets``), else -1 */
static Py_ssize_t offset_in(PyObject *obj, PyObject *type, const Py_ssize_t *offsets, int slot) {
    return Py_TYPE(obj) == (PyTypeObject *)type ? offsets[slot] : -1;
}

/* batch.<slot>: a new reference, or NULL with the error set */
static PyObject *slot_of(CompiledEmit *self, PyObject *batch, int slot) {
    return get_at(batch, offset_in(batch, self->batch_type, self->offsets, slot), slot_names[slot]);
}

/* batch.<slot> = value */
static int set_slot(CompiledEmit *self, PyObject *batch, int slot, PyObject *value) {
    return set_at(batch, offset_in(batch, self->batch_type, self->offsets, slot), slot_names[slot], value);
}

/* span.<slot>, where Span's slots are at ``offsets`` (the emit's and the receive loop's); a new reference */
static PyObject *span_get(PyObject *span_type, const Py_ssize_t *offsets, PyObject *span, int slot) {
    return get_at(span, offset_in(span, span_type, offsets, slot), span_names[slot]);
}

static int span_set(PyObject *span_type, const Py_ssize_t *offsets, PyObject *span, int slot, PyObject *value) {
    return set_at(span, offset_in(span, span_type, offsets, slot), span_names[slot], value);
}

/* Whether all ``n`` slots have offsets: an object can then be made and filled at them (no Python call) */
static int all_known(const Py_ssize_t *offsets, int n) {
    for (int i = 0; i < n; i++)
        if (offsets[i] < 0) return 0;
    return 1;
}

/* The instance attributes the anchored emit and the receive loop read and write on every tuple
   (``current``, ``span``, ``span_roots``, ``span_value``, ``anchor_span``) are slots of
   ``ReliableBoltInstance``: read and written at their offsets in the instance (``inst_offsets``), as a
   ``Span``'s are, without a hash or a dict probe; by name where its class made one something else. */
static PyObject *inst_attr_names[INST_ATTRS];

static Py_ssize_t slot_offset(PyObject *type, PyObject *name);

/* The offsets of ``inst``'s per-tuple attributes in it (-1: by name; all -1 without an ``inst``) */
static void inst_offsets_of(PyObject *inst, Py_ssize_t *offsets) {
    for (int i = 0; i < INST_ATTRS; i++)
        offsets[i] = inst ? slot_offset((PyObject *)Py_TYPE(inst), inst_attr_names[i]) : -1;
}

/* inst.<attr>; a new reference */
static PyObject *inst_get(const Py_ssize_t *offsets, PyObject *inst, int attr) {
    return get_at(inst, offsets[attr], inst_attr_names[attr]);
}

static int inst_set(const Py_ssize_t *offsets, PyObject *inst, int attr, PyObject *value) {
    return set_at(inst, offsets[attr], inst_attr_names[attr], value);
}

/* A root, a value or a share as a C word (``sizeof(long)`` is 8 here, as roots and values are 64 bits):
   1 if it is an int that fits, 0 if not (no error set). ``PyLong_AsUnsignedLong`` reads the digits
   directly; ``PyLong_AsUnsignedLongLong`` goes through ``_PyLong_AsByteArray``, several times slower. */
static int as_word(PyObject *value, unsigned long *word) {
    if (!PyLong_CheckExact(value)) return 0;
    *word = PyLong_AsUnsignedLong(value);
    if (*word == (unsigned long)-1 && PyErr_Occurred()) {
        PyErr_Clear();  /* negative, or past 64 bits */
        return 0;
    }
    return 1;
}

/* a ^ b, in C words where both fit (~90 instructions, not Python's ~260 for 64-bit ints); a new reference */
static PyObject *xor_values(PyObject *a, PyObject *b) {
    unsigned long x, y;
    if (as_word(a, &x) && as_word(b, &y)) return PyLong_FromUnsignedLong(x ^ y);
    return PyNumber_Xor(a, b);
}

/* The process's own generator of span values (``bits`` None): xoshiro256** (Blackman and Vigna), seeded
   from the kernel at import and again in a forked child, so no two processes draw the same sequence.
   Calling ``random.getrandbits(64)`` from here cost ~600 instructions a draw, three a sentence. */
static uint64_t rng[4];

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t next_bits(void) {
    uint64_t result = rotl(rng[1] * 5, 7) * 9, t = rng[1] << 17;
    rng[2] ^= rng[0];
    rng[3] ^= rng[1];
    rng[1] ^= rng[2];
    rng[0] ^= rng[3];
    rng[2] ^= t;
    rng[3] = rotl(rng[3], 45);
    return result;
}

static int seed_bits(void) {
    do {
        if (getrandom(rng, sizeof rng, 0) != (ssize_t)sizeof rng) return -1;
    } while (!(rng[0] | rng[1] | rng[2] | rng[3]));  /* the one state it must not have */
    return 0;
}

static void seed_bits_in_child(void) {
    if (seed_bits() < 0) abort();  /* drawing the parent's sequence would complete trees by mistake */
}

/* ``time.monotonic()`` as Python computes it (``_PyTime_AsSecondsDouble`` of CLOCK_MONOTONIC's
   nanoseconds), without the call: where ``clock`` is time.monotonic itself */
static PyObject *monotonic_function;

static PyObject *now_of(CompiledEmit *self) {
    if (self->clock != monotonic_function) return PyObject_CallNoArgs(self->clock);
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0) return PyErr_SetFromErrno(PyExc_OSError);
    int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    return PyFloat_FromDouble(ns % 1000000000 == 0 ? (double)(ns / 1000000000) : (double)ns / 1e9);
}

/* ``bits(64) or 1``: a span's value, or a share of one (new_value()); a new reference */
static PyObject *new_value(CompiledEmit *self) {
    if (self->bits == Py_None) {
        uint64_t bits = next_bits();
        return PyLong_FromUnsignedLongLong(bits ? bits : 1);
    }
    PyObject *value = PyObject_CallOneArg(self->bits, sixty_four);
    if (!value) return NULL;
    int nonzero = PyObject_IsTrue(value);
    if (nonzero > 0) return value;
    Py_DECREF(value);
    return nonzero < 0 ? NULL : PyLong_FromLong(1);
}

/* values[index] as Python's subscript takes it; a new reference, or NULL with the error set */
static PyObject *item_of(PyObject *values, Py_ssize_t index) {
    if (PyList_CheckExact(values) && index < PyList_GET_SIZE(values)) {
        PyObject *item = PyList_GET_ITEM(values, index);
        Py_INCREF(item);
        return item;
    }
    if (PyTuple_CheckExact(values) && index < PyTuple_GET_SIZE(values)) {
        PyObject *item = PyTuple_GET_ITEM(values, index);
        Py_INCREF(item);
        return item;
    }
    PyObject *i = PyLong_FromSsize_t(index);
    if (!i) return NULL;
    PyObject *item = PyObject_GetItem(values, i);
    Py_DECREF(i);
    return item;
}

/* batches[task], ``task`` a new reference (consumed); a new reference */
static PyObject *batch_of_task(CompiledEmit *self, PyObject *task) {
    if (!task) return NULL;
    PyObject *batch = PyObject_GetItem(self->batches, task);
    Py_DECREF(task);
    return batch;
}

static int bump_emits(CompiledEmit *self) {
    if (!PyList_CheckExact(self->emits) || PyList_GET_SIZE(self->emits) < 1) {
        PyErr_SetString(PyExc_TypeError, "CompiledEmit: emits must be a list of one count");
        return -1;
    }
    PyObject *one = PyLong_FromLong(1);
    if (!one) return -1;
    PyObject *n = PyNumber_Add(PyList_GET_ITEM(self->emits, 0), one);
    Py_DECREF(one);
    if (!n) return -1;
    return PyList_SetItem(self->emits, 0, n);  /* steals n, releases the old count */
}

/* The batch that takes ``values`` along ``route``; a new reference, Py_None (new) when nothing
   subscribes, or NULL with the error set. */
static PyObject *route_values(CompiledEmit *self, PyObject *route, PyObject *values) {
    PyObject *key_batches = PyTuple_GET_ITEM(route, 2), *key_miss = PyTuple_GET_ITEM(route, 3);
    PyObject *next_task = PyTuple_GET_ITEM(route, 4), *choose = PyTuple_GET_ITEM(route, 5);
    if (key_batches != Py_None) {
        Py_ssize_t key_index = PyLong_AsSsize_t(PyTuple_GET_ITEM(route, 1));
        if (key_index == -1 && PyErr_Occurred()) return NULL;
        PyObject *key = item_of(values, key_index);
        PyObject *batch = NULL;
        if (key) {
            batch = PyDict_GetItemWithError(key_batches, key);
            if (batch) {
                Py_INCREF(batch);
            } else if (!PyErr_Occurred()) {
                batch = PyObject_CallOneArg(key_miss, key);
                Py_DECREF(key);
                return batch;
            }
            Py_DECREF(key);
            if (batch) return batch;
        }
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) return NULL;
        PyErr_Clear();  /* an unhashable key: the chooser, as fast_emit's ``except TypeError`` */
        return batch_of_task(self, PyObject_CallOneArg(choose, values));
    }
    if (next_task != Py_None) return batch_of_task(self, PyObject_CallNoArgs(next_task));
    if (choose == Py_None) Py_RETURN_NONE;
    return batch_of_task(self, PyObject_CallOneArg(choose, values));
}

/* len(list) where ``list`` (a new reference, consumed) must be a list; -1 with the error set */
static Py_ssize_t list_size(PyObject *list) {
    if (!list) return -1;
    Py_ssize_t size = -1;
    if (PyList_CheckExact(list))
        size = PyList_GET_SIZE(list);
    else
        PyErr_SetString(PyExc_TypeError, "CompiledEmit: a batch's vals and spans must be lists");
    Py_DECREF(list);
    return size;
}

/* ``batch`` sent when it holds its ``limit`` (``Batch.full``), its open run holding ``held`` values */
static int send_if_full(CompiledEmit *self, PyObject *batch, Py_ssize_t held) {
    PyObject *limit = slot_of(self, batch, LIMIT);
    if (!limit) return -1;
    Py_ssize_t most = PyLong_AsSsize_t(limit);
    Py_DECREF(limit);
    if (most == -1 && PyErr_Occurred()) return -1;
    if (held >= most) {
        PyObject *done = PyObject_CallOneArg(self->send, batch);
        Py_XDECREF(done);
        if (!done) return -1;
    }
    return 0;
}

/* ``values`` appended to ``batch``'s open run (its stream is this emit's), the batch sent when full */
static int append_values(CompiledEmit *self, PyObject *batch, PyObject *values) {
    PyObject *vals = slot_of(self, batch, VALS);
    if (!vals) return -1;
    if (!PyList_CheckExact(vals)) {
        Py_DECREF(vals);
        PyErr_SetString(PyExc_TypeError, "CompiledEmit: a batch's vals must be a list");
        return -1;
    }
    int failed = PyList_Append(vals, values);
    Py_ssize_t held = PyList_GET_SIZE(vals);
    Py_DECREF(vals);
    if (failed) return -1;
    return send_if_full(self, batch, held);
}

/* 1 if ``batch``'s open run is of the default stream, 0 if not, -1 with the error set */
static int same_stream(CompiledEmit *self, PyObject *batch) {
    PyObject *stream = slot_of(self, batch, STREAM);
    if (!stream) return -1;
    int same = stream == self->stream ? 1 : PyObject_RichCompareBool(stream, self->stream, Py_EQ);
    Py_DECREF(stream);
    return same;
}

/* At most once: ``values`` into ``batch``'s open run (or a new run: ``inst.append``), the batch sent
   when full */
static int add_to_batch(CompiledEmit *self, PyObject *batch, PyObject *values) {
    int same = same_stream(self, batch);
    if (same < 0) return -1;
    if (!same) {
        PyObject *done = PyObject_CallFunctionObjArgs(self->append, batch, self->stream, values, NULL);
        Py_XDECREF(done);
        return done ? 0 : -1;
    }
    return append_values(self, batch, values);
}

/* A Span (``span_type``, whose slots are all known) made as ``Span(roots, value)`` makes it, without a
   Python frame; a new reference */
static PyObject *make_span(CompiledEmit *self, PyObject *roots, PyObject *value) {
    PyTypeObject *type = (PyTypeObject *)self->span_type;
    if (!self->spans_made_here) return PyObject_CallFunctionObjArgs(self->span_type, roots, value, NULL);
    PyObject *span = type->tp_alloc(type, 0);
    if (!span) return NULL;
    PyObject *initial[SPAN_SLOTS] = {roots, value, zero, Py_None, zero, zero, Py_False};
    for (int i = 0; i < SPAN_SLOTS; i++) set_at(span, self->span_offsets[i], NULL, initial[i]);
    return span;
}

/* ``batch``'s open run (this emit's stream) takes a new span of ``anchor``'s, as ``Batch.join`` opens one:
   no tree (None), or a share of ``anchor``'s value, which ``anchor``'s ack may ride on. 1 if done here,
   0 if ``anchor`` is not a Span this emit knows (``Batch.join`` does it), -1 with the error set. */
static int open_span(CompiledEmit *self, PyObject *batch, PyObject *anchor) {
    if (anchor != Py_None && (!self->span_type || Py_TYPE(anchor) != (PyTypeObject *)self->span_type)) return 0;
    PyObject *spans = slot_of(self, batch, SPANS);
    if (!spans) return -1;
    int result = -1;
    PyObject *share = NULL, *delta = NULL, *roots = NULL, *start = NULL, *at = NULL;
    Py_ssize_t held = list_size(slot_of(self, batch, VALS));
    if (held < 0 || !PyList_CheckExact(spans)) {
        if (held >= 0) PyErr_SetString(PyExc_TypeError, "CompiledEmit: a batch's spans must be a list");
        goto done;
    }
    if (!(start = PyLong_FromSsize_t(held))) goto done;
    if (anchor == Py_None) {
        if (PyList_Append(spans, start) || PyList_Append(spans, Py_None) || PyList_Append(spans, zero)) goto done;
    } else {
        PyObject *old_delta = NULL;
        if (!(share = new_value(self)) || !(old_delta = span_get(self->span_type, self->span_offsets, anchor, DELTA))) goto done;
        delta = xor_values(old_delta, share);
        Py_DECREF(old_delta);
        if (!delta || span_set(self->span_type, self->span_offsets, anchor, DELTA, delta) < 0) goto done;
        if (!(roots = span_get(self->span_type, self->span_offsets, anchor, ROOTS))) goto done;
        if (PyList_Append(spans, start) || PyList_Append(spans, roots) || PyList_Append(spans, share)) goto done;
        if (!(at = PyLong_FromSsize_t(PyList_GET_SIZE(spans) - 1))) goto done;
        if (span_set(self->span_type, self->span_offsets, anchor, CARRIED, spans) < 0 ||
            span_set(self->span_type, self->span_offsets, anchor, AT, at) < 0)
            goto done;
    }
    result = set_slot(self, batch, ANCHOR, anchor) < 0 ? -1 : 1;
done:
    Py_DECREF(spans);
    Py_XDECREF(share);
    Py_XDECREF(delta);
    Py_XDECREF(roots);
    Py_XDECREF(start);
    Py_XDECREF(at);
    return result;
}

/* At least once: ``values`` anchored to ``anchor`` (a received Span, or None: not tracked), as
   ``fast_emit``'s tracked path: into the batch's open span when that is ``anchor``'s, else a new span
   (a sentence's first word for this batch: ``open_span``), or through ``Batch.join`` (a new run) */
static int join_batch(CompiledEmit *self, PyObject *batch, PyObject *values, PyObject *anchor) {
    int same = same_stream(self, batch);
    if (same < 0) return -1;
    if (same) {
        PyObject *open = slot_of(self, batch, ANCHOR);
        if (!open) return -1;
        Py_DECREF(open);  /* only its identity is compared */
        if (open == anchor) return append_values(self, batch, values);
        int opened = open_span(self, batch, anchor);
        if (opened < 0) return -1;
        if (opened) return append_values(self, batch, values);
    }
    PyObject *done = PyObject_CallMethodObjArgs(batch, str_join, self->stream, values, anchor, NULL);
    if (!done) return -1;
    Py_DECREF(done);
    Py_ssize_t held = list_size(slot_of(self, batch, VALS));
    return held < 0 ? -1 : send_if_full(self, batch, held);
}

/* ``inst.anchor()`` under ``auto_ack`` (``span_type`` given): None outside process(), else the Span of
   the received span being processed (``open_span``: made the first time, None when it is not
   tracked), kept in ``inst.anchor_span``; a new reference */
static PyObject *auto_acked_anchor(CompiledEmit *self) {
    PyObject *current = inst_get(self->inst_offsets, self->inst, CURRENT);
    if (!current) return NULL;
    Py_DECREF(current);  /* only its identity is compared */
    if (current == self->idle) Py_RETURN_NONE;
    PyObject *span = inst_get(self->inst_offsets, self->inst, SPAN);
    if (!span) return NULL;
    if (span == Py_None) {
        PyObject *roots = inst_get(self->inst_offsets, self->inst, SPAN_ROOTS);
        if (!roots) goto failed;
        if (roots != Py_None) {
            PyObject *value = inst_get(self->inst_offsets, self->inst, SPAN_VALUE);
            if (!value) {
                Py_DECREF(roots);
                goto failed;
            }
            Py_DECREF(span);
            span = make_span(self, roots, value);
            Py_DECREF(value);
            if (!span || inst_set(self->inst_offsets, self->inst, SPAN, span) < 0) {
                Py_DECREF(roots);
                goto failed;
            }
        }
        Py_DECREF(roots);
    }
    if (inst_set(self->inst_offsets, self->inst, ANCHOR_SPAN, span) < 0) goto failed;
    return span;
failed:
    Py_XDECREF(span);
    return NULL;
}

/* The span a bolt's emit joins: ``inst.anchor_span or inst.anchor()`` (None: the bolt does not
   auto-anchor, or the tuple being processed is acked or not tracked); a new reference */
static PyObject *anchor_of(CompiledEmit *self) {
    if (!self->auto_anchor) Py_RETURN_NONE;
    PyObject *span = inst_get(self->inst_offsets, self->inst, ANCHOR_SPAN);
    if (!span) return NULL;
    int held = PyObject_IsTrue(span);
    if (held) {
        if (held > 0) return span;
        Py_DECREF(span);
        return NULL;
    }
    Py_DECREF(span);
    if (self->span_type) return auto_acked_anchor(self);
    return PyObject_CallMethodNoArgs(self->inst, str_anchor);
}

/* A spout's tuple with an id starts a tree of its own in ``batch`` (``fast_emit``'s tracked spout
   path, with new_value(), fresh_root() and AckTracker.start() inlined as there): a new span whose
   value's random bits name the root too */
static int start_tree(CompiledEmit *self, PyObject *batch, PyObject *values, PyObject *tup_id) {
    PyObject *value = NULL, *root = NULL, *masked = NULL, *now = NULL, *entry = NULL, *spans = NULL;
    int result = -1;
    value = new_value(self);
    if (!value) goto done;
    unsigned long word;
    if (self->in_words && as_word(value, &word)) {
        root = PyLong_FromUnsignedLong(self->task_word | (word & self->root_word));
    } else {
        masked = PyNumber_And(value, self->root_bits);
        if (!masked) goto done;
        root = PyNumber_Or(self->task_bits, masked);
    }
    if (!root) goto done;
    now = now_of(self);
    if (!now) goto done;
    entry = PyList_New(3);
    if (!entry) goto done;
    Py_INCREF(tup_id);
    Py_INCREF(value);
    Py_INCREF(now);
    PyList_SET_ITEM(entry, 0, tup_id);
    PyList_SET_ITEM(entry, 1, value);
    PyList_SET_ITEM(entry, 2, now);
    PyObject *held = PyDict_SetDefault(self->trees, root, entry);  /* borrowed */
    if (!held) goto done;
    if (held != entry) {  /* an open tree has this root: inst.tracker.open_root draws another */
        PyObject *tracker = PyObject_GetAttr(self->inst, str_tracker);
        if (!tracker) goto done;
        Py_DECREF(root);
        root = PyObject_CallMethodObjArgs(tracker, str_open_root, self->task_id, tup_id, value, now, NULL);
        Py_DECREF(tracker);
        if (!root) goto done;
    }
    int same = same_stream(self, batch);
    if (same < 0) goto done;
    if (!same) {
        PyObject *done_run = PyObject_CallMethodObjArgs(batch, str_open_run, self->stream, Py_True, NULL);
        if (!done_run) goto done;
        Py_DECREF(done_run);
    }
    spans = slot_of(self, batch, SPANS);
    if (!spans) goto done;
    if (!PyList_CheckExact(spans)) {
        PyErr_SetString(PyExc_TypeError, "CompiledEmit: a batch's spans must be a list");
        goto done;
    }
    Py_ssize_t start = list_size(slot_of(self, batch, VALS));
    if (start < 0) goto done;
    PyObject *at = PyLong_FromSsize_t(start);  /* Batch.add_span inlined */
    if (!at) goto done;
    int failed = PyList_Append(spans, at) || PyList_Append(spans, root) || PyList_Append(spans, value);
    Py_DECREF(at);
    if (failed || set_slot(self, batch, ANCHOR, self->no_anchor) < 0) goto done;
    result = append_values(self, batch, values);
done:
    Py_XDECREF(value);
    Py_XDECREF(masked);
    Py_XDECREF(root);
    Py_XDECREF(now);
    Py_XDECREF(entry);
    Py_XDECREF(spans);
    return result;
}

/* The values of a call this emit takes: ``emit(values)``, and for a spout at least once
   ``emit(values, tup_id)`` or ``emit(values, tup_id=...)`` (``*tup_id`` borrowed; Py_None without).
   NULL for every other call, which goes to the fallback. */
static PyObject *values_of(CompiledEmit *self, PyObject *const *args, size_t nargsf, PyObject *kwnames,
                           PyObject **tup_id) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    *tup_id = Py_None;
    if (nargs == 2 && !nkw) return args[1];
    if (self->mode != SPOUT) return NULL;
    if (nargs == 3 && !nkw) {
        *tup_id = args[2];
        return args[1];
    }
    if (nargs == 2 && nkw == 1) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, 0);
        if (name == slot_names[TUP_ID] || (PyUnicode_Check(name) && PyUnicode_Compare(name, slot_names[TUP_ID]) == 0)) {
            *tup_id = args[2];
            return args[1];
        }
    }
    return NULL;
}

static PyObject *fast_emit_call(CompiledEmit *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    PyObject *tup_id;
    PyObject *values = values_of(self, args, nargsf, kwnames, &tup_id);
    if (!values) return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    PyObject *route = PyDict_GetItemWithError(self->routes, self->stream);
    if (!route) {
        if (PyErr_Occurred()) return NULL;
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    }
    if (!PyTuple_Check(route) || PyTuple_GET_SIZE(route) != 6) {
        PyErr_SetString(PyExc_TypeError, "CompiledEmit: a fast route must be a tuple of 6");
        return NULL;
    }
    Py_ssize_t fields = PyLong_AsSsize_t(PyTuple_GET_ITEM(route, 0));
    if (fields == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t n = PyObject_Length(values);
    if (n < 0) return NULL;
    if (n != fields) return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    Py_INCREF(route);  /* key_miss may refresh the routes */
    PyObject *batch = NULL;
    if (bump_emits(self) == 0) batch = route_values(self, route, values);
    Py_DECREF(route);
    if (!batch) return NULL;
    if (batch == Py_None) {  /* nothing subscribes to the stream */
        Py_DECREF(batch);
        if (tup_id != Py_None) {  /* a tree without spans is complete at once */
            PyObject *done = PyObject_CallMethodObjArgs(self->inst, str_complete, tup_id, zero_seconds, NULL);
            if (!done) return NULL;
            Py_DECREF(done);
        }
        return PyTuple_New(0);
    }
    int failed;
    if (self->mode == UNTRACKED) {
        failed = add_to_batch(self, batch, values);
    } else if (tup_id != Py_None) {
        failed = start_tree(self, batch, values, tup_id);
    } else {
        PyObject *anchor = anchor_of(self);
        failed = anchor ? join_batch(self, batch, values, anchor) : -1;
        Py_XDECREF(anchor);
    }
    PyObject *targets = failed ? NULL : slot_of(self, batch, TARGETS);
    Py_DECREF(batch);
    return targets;
}

/* An object field of the emit: the i-th, in the order of the constructor's arguments; NULL past the last */
static PyObject **field(CompiledEmit *self, int i) {
    PyObject **fields[] = {&self->routes, &self->batches, &self->emits, &self->send, &self->append, &self->fallback,
                           &self->stream, &self->batch_type, &self->inst, &self->task_id, &self->trees, &self->bits,
                           &self->clock, &self->task_bits, &self->root_bits, &self->no_anchor, &self->span_type,
                           &self->idle};
    return i < (int)(sizeof fields / sizeof *fields) ? fields[i] : NULL;
}

enum { GIVEN = 18, FIRST_SPOUT = 9, LAST_SPOUT = 15, BITS = 11, SPAN_TYPE = 16, IDLE = 17 };

/* The offset of ``type``'s slot ``name`` in its objects (a member descriptor of an object pointer), or -1 */
static Py_ssize_t slot_offset(PyObject *type, PyObject *name) {
    PyObject *descr = PyObject_GetAttr(type, name);
    if (!descr) {
        PyErr_Clear();
        return -1;
    }
    Py_ssize_t offset = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY)) offset = member->offset;
    }
    Py_DECREF(descr);
    return offset;
}

static PyObject *fast_emit_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *given[GIVEN] = {NULL};
    int auto_anchor = 0;
    static char *names[] = {"routes", "batches", "emits", "send", "append", "fallback", "stream", "batch_type",
                            "inst", "auto_anchor", "task_id", "trees", "bits", "clock", "task_bits", "root_bits",
                            "no_anchor", "span_type", "idle", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!OOOUO!|$OpOO!OOOOOO!O:CompiledEmit", names, &PyDict_Type,
                                     &given[0], &PyDict_Type, &given[1], &PyList_Type, &given[2], &given[3], &given[4],
                                     &given[5], &given[6], &PyType_Type, &given[7], &given[8], &auto_anchor, &given[9],
                                     &PyDict_Type, &given[10], &given[11], &given[12], &given[13], &given[14],
                                     &given[15], &PyType_Type, &given[SPAN_TYPE], &given[IDLE]))
        return NULL;
    int mode = !given[8] ? UNTRACKED : !given[10] ? ANCHORED : SPOUT;
    for (int i = FIRST_SPOUT; i <= LAST_SPOUT; i++) {
        if (mode == SPOUT && !given[i]) {
            PyErr_SetString(PyExc_TypeError, "CompiledEmit: a spout's emit needs trees, bits, clock, task_id, "
                                             "task_bits, root_bits and no_anchor");
            return NULL;
        }
        if (mode != SPOUT && given[i] && !(i == BITS && given[SPAN_TYPE])) {
            PyErr_SetString(PyExc_TypeError, "CompiledEmit: only a spout's emit (inst and trees) takes them");
            return NULL;
        }
    }
    if ((given[SPAN_TYPE] || given[IDLE]) && !(mode == ANCHORED && auto_anchor && given[SPAN_TYPE] && given[IDLE]
                                                && given[BITS])) {
        PyErr_SetString(PyExc_TypeError, "CompiledEmit: span_type, idle and bits go together, to an auto-anchored "
                                         "bolt's emit under auto_ack");
        return NULL;
    }
    CompiledEmit *self = (CompiledEmit *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = (vectorcallfunc)fast_emit_call;
    self->mode = mode;
    self->auto_anchor = auto_anchor;
    for (int i = 0; i < GIVEN; i++) {
        Py_XINCREF(given[i]);
        *field(self, i) = given[i];
    }
    for (int i = 0; i < SLOTS; i++) self->offsets[i] = slot_offset(given[7], slot_names[i]);
    for (int i = 0; i < SPAN_SLOTS; i++)
        self->span_offsets[i] = given[SPAN_TYPE] ? slot_offset(given[SPAN_TYPE], span_names[i]) : -1;
    self->spans_made_here = all_known(self->span_offsets, SPAN_SLOTS);
    inst_offsets_of(given[8], self->inst_offsets);
    self->in_words = mode == SPOUT && as_word(self->task_bits, &self->task_word) &&
                     as_word(self->root_bits, &self->root_word);
    return (PyObject *)self;
}

static int fast_emit_traverse(CompiledEmit *self, visitproc visit, void *arg) {
    PyObject **at;
    for (int i = 0; (at = field(self, i)); i++) Py_VISIT(*at);
    return 0;
}

static int fast_emit_clear(CompiledEmit *self) {
    PyObject **at;
    for (int i = 0; (at = field(self, i)); i++) Py_CLEAR(*at);
    return 0;
}

static void fast_emit_dealloc(CompiledEmit *self) {
    PyObject_GC_UnTrack(self);
    fast_emit_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* as a function: bound to the component when looked up on it */
static PyObject *fast_emit_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyMemberDef fast_emit_members[] = {
    {"fallback", T_OBJECT, offsetof(CompiledEmit, fallback), READONLY, "the Python emit every other call goes to"},
    {NULL},
};

static PyTypeObject CompiledEmitType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "squall.runtime.instance._emit.CompiledEmit",
    .tp_basicsize = sizeof(CompiledEmit),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "The fast emit of one task (see emit.py: fast_emit).",
    .tp_new = fast_emit_new,
    .tp_traverse = (traverseproc)fast_emit_traverse,
    .tp_clear = (inquiry)fast_emit_clear,
    .tp_dealloc = (destructor)fast_emit_dealloc,
    .tp_vectorcall_offset = offsetof(CompiledEmit, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = fast_emit_get,
    .tp_members = fast_emit_members,
};

/* ---------------------------------------------------------------------------------------------------
   ``AutoAckedLoop(inst, make, span_type, idle, rides)``: ``ReliableBoltInstance._run_auto_acked``'s loops
   in C, a received run's tuples through ``process`` a span at a time, as the Python loop runs them
   line for line (that loop stays the reference). ``run(process, source, vals, spans, at, touched)``
   starts at ``at`` = [span index, tuple index]; when ``process`` raises it stops there, with the
   tuple in ``at[2]``: the caller handles the exception (``raised``) and runs on from the next tuple. */

enum { T_VALUES, T_SOURCE, T_ROOTS, TUPLE_SLOTS };

typedef struct {
    PyObject_HEAD
    PyObject *inst;       /* the ReliableBoltInstance */
    PyObject *make;       /* AutoAckedTuple */
    PyObject *span_type;  /* Span */
    PyObject *idle;       /* IDLE */
    int rides;            /* a span's ack may ride on its last child span (not a stateful bolt) */
    Py_ssize_t inst_offsets[INST_ATTRS];  /* of inst's per-tuple attributes (inst_offsets_of) */
    Py_ssize_t tuple_offsets[TUPLE_SLOTS];
    int tuples_made_here;  /* every slot of make has an offset: received_tuple fills them */
    Py_ssize_t span_offsets[SPAN_SLOTS];
} AutoAckedLoop;

static PyObject *tuple_names[TUPLE_SLOTS];
static PyObject *str_span_acked;

/* ``make()`` with the first ``n`` of its values, source and roots (``given``): allocated and set at their
   ``offsets`` when ``fast`` (``make`` has them all, and its construction does nothing else), else made
   by calling it and set by name; a new reference. Both receive loops make their tuples with it. */
static PyObject *new_tuple(PyTypeObject *make, int fast, const Py_ssize_t *offsets, PyObject *const *given, int n) {
    PyObject *tup = fast ? make->tp_alloc(make, 0) : PyObject_CallNoArgs((PyObject *)make);
    if (!tup) return NULL;
    for (int i = 0; i < n; i++) {
        if (set_at(tup, fast ? offsets[i] : -1, tuple_names[i], given[i]) < 0) {
            Py_DECREF(tup);
            return NULL;
        }
    }
    return tup;
}

/* ``make()`` with its values, source and roots (at their offsets when ``make`` has them all); a new reference */
static PyObject *received_tuple(AutoAckedLoop *self, PyObject *values, PyObject *source, PyObject *roots) {
    PyObject *given[TUPLE_SLOTS] = {values, source, roots};
    return new_tuple((PyTypeObject *)self->make, self->tuples_made_here, self->tuple_offsets, given, TUPLE_SLOTS);
}

/* span.<slot>, at its offset when ``span`` is a Span; a new reference */
static PyObject *loop_span_slot(AutoAckedLoop *self, PyObject *span, int slot) {
    return span_get(self->span_type, self->span_offsets, span, slot);
}

/* The received span whose ``Span`` the bolt made (it anchored to it, or failed it) is done: unless it
   failed, its ack rides on its last child span while that is unsent, else ``inst._span_acked``. */
static int span_done(AutoAckedLoop *self, PyObject *span) {
    PyObject *failed = loop_span_slot(self, span, FAILED);
    if (!failed) return -1;
    int is_failed = PyObject_IsTrue(failed);
    Py_DECREF(failed);
    if (is_failed) return is_failed < 0 ? -1 : 0;
    PyObject *value = NULL, *carried = NULL, *at = NULL, *delta = NULL, *share = NULL;
    int result = -1;
    if (!(value = loop_span_slot(self, span, VALUE)) || !(carried = loop_span_slot(self, span, CARRIED))) goto done;
    if (!(at = loop_span_slot(self, span, AT))) goto done;
    Py_ssize_t index = PyLong_Check(at) ? PyLong_AsSsize_t(at) : -1;
    if (index == -1 && PyErr_Occurred()) goto done;
    if (self->rides && PyList_CheckExact(carried) && index >= 0 && index < PyList_GET_SIZE(carried) &&
        PyLong_CheckExact(value)) {  /* Span.ride inlined: a split's every input */
        if (!(delta = loop_span_slot(self, span, DELTA))) goto done;
        PyObject *rest = xor_values(value, delta);
        if (!rest) goto done;
        share = xor_values(PyList_GET_ITEM(carried, index), rest);
        Py_DECREF(rest);
        if (!share) goto done;
        Py_INCREF(share);
        if (PyList_SetItem(carried, index, share) < 0) goto done;
    } else {
        PyObject *done_ack = PyObject_CallMethodOneArg(self->inst, str_span_acked, span);
        if (!done_ack) goto done;
        Py_DECREF(done_ack);
    }
    result = 0;
done:
    Py_XDECREF(value);
    Py_XDECREF(carried);
    Py_XDECREF(at);
    Py_XDECREF(delta);
    Py_XDECREF(share);
    return result;
}

static int set_position(PyObject *at, Py_ssize_t k, Py_ssize_t i, PyObject *tup) {
    PyObject *span_index = PyLong_FromSsize_t(k), *tuple_index = PyLong_FromSsize_t(i);
    if (!span_index || !tuple_index) {
        Py_XDECREF(span_index);
        Py_XDECREF(tuple_index);
        return -1;
    }
    int failed = PyList_SetSlice(at, 0, PyList_GET_SIZE(at), NULL) || PyList_Append(at, span_index) ||
                 PyList_Append(at, tuple_index) || PyList_Append(at, tup);
    Py_DECREF(span_index);
    Py_DECREF(tuple_index);
    return failed ? -1 : 0;
}

static PyObject *loop_run(AutoAckedLoop *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyList_CheckExact(args[2]) || !PyList_CheckExact(args[3]) || !PyList_CheckExact(args[4]) ||
        PyList_GET_SIZE(args[4]) < 2 || !PyList_CheckExact(args[5])) {
        PyErr_SetString(PyExc_TypeError, "AutoAckedLoop.run(process, source, vals, spans, at, touched): lists");
        return NULL;
    }
    PyObject *process = args[0], *source = args[1], *vals = args[2], *spans = args[3], *at = args[4];
    PyObject *touched = args[5], *inst = self->inst;
    Py_ssize_t k0 = PyLong_AsSsize_t(PyList_GET_ITEM(at, 0)), i0 = PyLong_AsSsize_t(PyList_GET_ITEM(at, 1));
    if ((k0 == -1 || i0 == -1) && PyErr_Occurred()) return NULL;
    Py_ssize_t n_spans = PyList_GET_SIZE(spans);
    if (n_spans % 3) {
        PyErr_SetString(PyExc_ValueError, "AutoAckedLoop.run: spans are [start, roots, value, ...]");
        return NULL;
    }
    for (Py_ssize_t k = k0; k < n_spans; k += 3) {
        Py_ssize_t start = PyLong_AsSsize_t(PyList_GET_ITEM(spans, k));
        Py_ssize_t end = k + 3 < n_spans ? PyLong_AsSsize_t(PyList_GET_ITEM(spans, k + 3)) : PyList_GET_SIZE(vals);
        if ((start == -1 || end == -1) && PyErr_Occurred()) return NULL;
        if (end > PyList_GET_SIZE(vals)) end = PyList_GET_SIZE(vals);
        PyObject *roots = PyList_GET_ITEM(spans, k + 1);
        Py_ssize_t i = k == k0 ? i0 : start;
        if (i <= start) {  /* a span begins: its roots and value, no Span yet */
            i = start;
            if (inst_set(self->inst_offsets, inst, SPAN_ROOTS, roots) < 0 ||
                inst_set(self->inst_offsets, inst, SPAN_VALUE, PyList_GET_ITEM(spans, k + 2)) < 0 ||
                inst_set(self->inst_offsets, inst, SPAN, Py_None) < 0 || inst_set(self->inst_offsets, inst, ANCHOR_SPAN, Py_None) < 0)
                return NULL;
        }
        Py_INCREF(roots);
        for (; i < end; i++) {
            PyObject *tup = received_tuple(self, PyList_GET_ITEM(vals, i), source, roots);
            PyObject *done = NULL;
            if (tup && inst_set(self->inst_offsets, inst, CURRENT, tup) == 0) done = PyObject_CallOneArg(process, tup);
            if (!done) {
                Py_DECREF(roots);
                if (!tup) return NULL;
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);
                int stored = set_position(at, k, i, tup);
                Py_DECREF(tup);
                if (stored < 0) {
                    Py_XDECREF(type);
                    Py_XDECREF(value);
                    Py_XDECREF(traceback);
                    return NULL;
                }
                PyErr_Restore(type, value, traceback);
                return NULL;
            }
            Py_DECREF(done);
            Py_DECREF(tup);
        }
        Py_DECREF(roots);
        PyObject *span = inst_get(self->inst_offsets, inst, SPAN);
        if (!span) return NULL;
        if (span != Py_None) {
            PyObject *index = PyLong_FromSsize_t(k);
            int failed = !index || PyList_Append(touched, index) < 0 || span_done(self, span) < 0;
            Py_XDECREF(index);
            if (failed) {
                Py_DECREF(span);
                return NULL;
            }
        }
        Py_DECREF(span);
    }
    Py_RETURN_NONE;
}

static PyObject *loop_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *inst, *make, *span_type, *idle;
    int rides;
    static char *names[] = {"inst", "make", "span_type", "idle", "rides", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!Op:AutoAckedLoop", names, &inst, &PyType_Type, &make,
                                     &PyType_Type, &span_type, &idle, &rides))
        return NULL;
    AutoAckedLoop *self = (AutoAckedLoop *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    PyObject *given[] = {inst, make, span_type, idle};
    PyObject **fields[] = {&self->inst, &self->make, &self->span_type, &self->idle};
    for (int i = 0; i < 4; i++) {
        Py_INCREF(given[i]);
        *fields[i] = given[i];
    }
    self->rides = rides;
    for (int i = 0; i < TUPLE_SLOTS; i++) self->tuple_offsets[i] = slot_offset(make, tuple_names[i]);
    self->tuples_made_here = all_known(self->tuple_offsets, TUPLE_SLOTS);
    for (int i = 0; i < SPAN_SLOTS; i++) self->span_offsets[i] = slot_offset(span_type, span_names[i]);
    inst_offsets_of(inst, self->inst_offsets);
    return (PyObject *)self;
}

static int loop_traverse(AutoAckedLoop *self, visitproc visit, void *arg) {
    Py_VISIT(self->inst);
    Py_VISIT(self->make);
    Py_VISIT(self->span_type);
    Py_VISIT(self->idle);
    return 0;
}

static int loop_clear(AutoAckedLoop *self) {
    Py_CLEAR(self->inst);
    Py_CLEAR(self->make);
    Py_CLEAR(self->span_type);
    Py_CLEAR(self->idle);
    return 0;
}

static void loop_dealloc(AutoAckedLoop *self) {
    PyObject_GC_UnTrack(self);
    loop_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef loop_methods[] = {
    {"run", (PyCFunction)(void (*)(void))loop_run, METH_FASTCALL,
     "run(process, source, vals, spans, at, touched): a received run's tuples from ``at`` on"},
    {NULL},
};

static PyTypeObject AutoAckedLoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "squall.runtime.instance._emit.AutoAckedLoop",
    .tp_basicsize = sizeof(AutoAckedLoop),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A bolt's receive loop under auto_ack (see reliable.py: _run_auto_acked).",
    .tp_new = loop_new,
    .tp_traverse = (traverseproc)loop_traverse,
    .tp_clear = (inquiry)loop_clear,
    .tp_dealloc = (destructor)loop_dealloc,
    .tp_methods = loop_methods,
};

/* ---------------------------------------------------------------------------------------------------
   ``ack_all(trees, acks, now, call_ids)``: ``AckTracker.ack_all``'s loop in C, over the tracker's own dict
   (root -> [tup_id, xor, emitted at]) and a flat ``[root, value, ...]``, as the Python loop runs it line
   for line (that loop stays the reference). Returns (the tup_ids of the trees completed, in order; their
   seconds since emitted, summed; how many tuples beyond one a tree the completed ``call_ids`` trees
   held: ``AckTracker.extra`` falls by it). */
static PyObject *ack_all(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyDict_CheckExact(args[0]) || !PyList_CheckExact(args[1]) || !PyType_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "ack_all(trees, acks, now, call_ids): a dict, a list, a float, a type");
        return NULL;
    }
    PyObject *trees = args[0], *acks = args[1], *call_ids = args[3];
    double now = PyFloat_AsDouble(args[2]);
    if (now == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *done = PyList_New(0);
    if (!done) return NULL;
    double emitted = 0.0;
    Py_ssize_t calls_extra = 0;
    for (Py_ssize_t i = 0; i + 1 < PyList_GET_SIZE(acks); i += 2) {
        PyObject *root = PyList_GET_ITEM(acks, i);
        PyObject *entry = PyDict_GetItemWithError(trees, root);
        if (!entry) {
            if (PyErr_Occurred()) goto failed;
            continue;  /* completed, failed, timed out, or of another run of this task */
        }
        if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) != 3) {
            PyErr_SetString(PyExc_TypeError, "ack_all: a tree is [tup_id, xor, emitted at]");
            goto failed;
        }
        PyObject *xor = xor_values(PyList_GET_ITEM(entry, 1), PyList_GET_ITEM(acks, i + 1));
        if (!xor) goto failed;
        int open = PyObject_IsTrue(xor);
        PyList_SetItem(entry, 1, xor);  /* steals xor */
        if (open < 0) goto failed;
        if (open) continue;
        Py_INCREF(entry);  /* held while its key is deleted */
        PyObject *tup_id = PyList_GET_ITEM(entry, 0);
        double at = PyFloat_AsDouble(PyList_GET_ITEM(entry, 2));
        int failed = at == -1.0 && PyErr_Occurred();
        if (!failed && Py_TYPE(tup_id) == (PyTypeObject *)call_ids) {
            Py_ssize_t n = PyObject_Length(tup_id);
            failed = n < 0 || PyList_SetSlice(done, PyList_GET_SIZE(done), PyList_GET_SIZE(done), tup_id) < 0;
            emitted += at * (double)n;
            calls_extra += n - 1;
        } else if (!failed) {
            failed = PyList_Append(done, tup_id) < 0;
            emitted += at;
        }
        failed = failed || PyDict_DelItem(trees, root) < 0;
        Py_DECREF(entry);
        if (failed) goto failed;
    }
    return Py_BuildValue("(Ndn)", done, (double)PyList_GET_SIZE(done) * now - emitted, calls_extra);
failed:
    Py_DECREF(done);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------------
   ``cut_rows(key_batches, key_index, width, values_list)``: ``emit_many``'s length check and
   ``per_destination``'s cut for a fields-grouped route, in one pass: ``[(batch, rows), ...]``, each
   destination's rows in emit order and the destinations in order of their first row (one destination:
   ``values_list`` itself). None where the Python path must decide: a row that is not a list or tuple of
   ``width`` values, or a key ``key_batches`` does not know yet (or cannot hash). */
static PyObject *cut_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyDict_CheckExact(args[0]) || !PyList_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "cut_rows(key_batches, key_index, width, values_list): a dict, two ints, a list");
        return NULL;
    }
    PyObject *key_batches = args[0], *values_list = args[3];
    Py_ssize_t key_index = PyLong_AsSsize_t(args[1]), width = PyLong_AsSsize_t(args[2]);
    if ((key_index == -1 || width == -1) && PyErr_Occurred()) return NULL;
    if (key_index < 0 || key_index >= width) {
        PyErr_SetString(PyExc_ValueError, "cut_rows: key_index outside the row's width");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(values_list);
    PyObject *first = NULL, *last = NULL, *last_rows = NULL;  /* borrowed */
    PyObject *shares = NULL;  /* batch -> its rows, made at the first row of a second destination */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(values_list, i);
        if (!(PyList_CheckExact(row) || PyTuple_CheckExact(row)) || PySequence_Fast_GET_SIZE(row) != width) goto python;
        PyObject *batch = PyDict_GetItemWithError(key_batches, PySequence_Fast_GET_ITEM(row, key_index));
        if (!batch) {
            PyErr_Clear();  /* unhashable: the Python path routes it */
            goto python;
        }
        if (!first) {
            first = last = batch;
            continue;
        }
        if (batch == last && last_rows == NULL) continue;  /* still every row to the first destination */
        if (!shares) {  /* a second destination: the first one's rows so far become its share */
            if (!(shares = PyDict_New())) return NULL;
            PyObject *rows = PyList_GetSlice(values_list, 0, i);
            int failed = !rows || PyDict_SetItem(shares, first, rows) < 0;
            Py_XDECREF(rows);
            if (failed) goto failed;
            last = first;
            last_rows = rows;  /* borrowed from shares */
        }
        if (batch != last) {
            last_rows = PyDict_GetItemWithError(shares, batch);
            if (!last_rows) {
                if (PyErr_Occurred()) goto failed;
                PyObject *rows = PyList_New(0);
                int failed = !rows || PyDict_SetItem(shares, batch, rows) < 0;
                Py_XDECREF(rows);
                if (failed) goto failed;
                last_rows = rows;
            }
            last = batch;
        }
        if (PyList_Append(last_rows, row) < 0) goto failed;
    }
    if (!first) return PyList_New(0);
    if (!shares) return Py_BuildValue("[(OO)]", first, values_list);
    PyObject *items = PyDict_Items(shares);
    Py_DECREF(shares);
    return items;
python:
    Py_XDECREF(shares);
    Py_RETURN_NONE;
failed:
    Py_XDECREF(shares);
    return NULL;
}

/* ---------------------------------------------------------------------------------------------------
   ``process_rows(make, process, values_list, source)``: ``tuples.process_run``'s loop at most once, a
   tuple at a time through ``process``, as the Python loop runs it line for line (that loop stays the
   reference): ``make()`` (at its slots' offsets where ``make`` has them) with its values and source.
   A raise in ``process`` ends the run there and goes on up, as in Python. */
static PyObject *process_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyType_Check(args[0]) || !PyList_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "process_rows(make, process, values_list, source): a type, a callable, a list, ...");
        return NULL;
    }
    PyTypeObject *make = (PyTypeObject *)args[0];
    PyObject *process = args[1], *values_list = args[2], *source = args[3];
    Py_ssize_t offsets[2] = {slot_offset((PyObject *)make, tuple_names[T_VALUES]),
                             slot_offset((PyObject *)make, tuple_names[T_SOURCE])};
    int fast = all_known(offsets, 2) && make->tp_init == PyBaseObject_Type.tp_init &&
               make->tp_new == PyBaseObject_Type.tp_new;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(values_list); i++) {  /* process may change the list */
        PyObject *given[2] = {PyList_GET_ITEM(values_list, i), source};  /* values, source */
        Py_INCREF(given[0]);  /* held while make() (its own __init__) may change the list */
        PyObject *tup = new_tuple(make, fast, offsets, given, 2);
        Py_DECREF(given[0]);
        PyObject *result = tup ? PyObject_CallOneArg(process, tup) : NULL;
        Py_XDECREF(tup);
        if (!result) return NULL;
        Py_DECREF(result);
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_functions[] = {
    {"ack_all", (PyCFunction)(void (*)(void))ack_all, METH_FASTCALL,
     "ack_all(trees, acks, now, call_ids): AckTracker.ack_all's loop (done, latency, calls' extra tuples closed)"},
    {"cut_rows", (PyCFunction)(void (*)(void))cut_rows, METH_FASTCALL,
     "cut_rows(key_batches, key_index, width, values_list): emit_many's check and cut by key, or None"},
    {"process_rows", (PyCFunction)(void (*)(void))process_rows, METH_FASTCALL,
     "process_rows(make, process, values_list, source): process_run's loop at most once"},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_emit",
    "The per-tuple paths in C: the emit, a bolt's receive loops, a spout's acks, emit_many's cut.", -1,
    module_functions};

PyMODINIT_FUNC PyInit__emit(void) {
    if (PyType_Ready(&CompiledEmitType) < 0 || PyType_Ready(&AutoAckedLoopType) < 0) return NULL;
    const char *tuples[TUPLE_SLOTS] = {"values", "source", "roots"};
    for (int i = 0; i < TUPLE_SLOTS; i++)
        if (!(tuple_names[i] = PyUnicode_InternFromString(tuples[i]))) return NULL;
    if (!(str_span_acked = PyUnicode_InternFromString("_span_acked"))) return NULL;
    const char *names[NAMES] = {"stream", "vals", "limit", "targets", "spans", "anchor", "tup_id"};
    for (int i = 0; i < NAMES; i++)
        if (!(slot_names[i] = PyUnicode_InternFromString(names[i]))) return NULL;
    const char *spans[SPAN_SLOTS] = {"roots", "value", "delta", "carried", "at", "open", "failed"};
    for (int i = 0; i < SPAN_SLOTS; i++)
        if (!(span_names[i] = PyUnicode_InternFromString(spans[i]))) return NULL;
    struct { PyObject **name; const char *text; } methods[] = {
        {&str_anchor, "anchor"}, {&str_join, "join"}, {&str_open_run, "open_run"},
        {&str_complete, "complete"}, {&str_tracker, "tracker"}, {&str_open_root, "open_root"}};
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++)
        if (!(*methods[i].name = PyUnicode_InternFromString(methods[i].text))) return NULL;
    const char *attrs[INST_ATTRS] = {"current", "span", "span_roots", "span_value", "anchor_span"};
    for (int i = 0; i < INST_ATTRS; i++)
        if (!(inst_attr_names[i] = PyUnicode_InternFromString(attrs[i]))) return NULL;
    if (!(sixty_four = PyLong_FromLong(64)) || !(zero_seconds = PyFloat_FromDouble(0.0)) || !(zero = PyLong_FromLong(0)))
        return NULL;
    if (seed_bits() < 0 || pthread_atfork(NULL, NULL, seed_bits_in_child) != 0) {
        PyErr_SetString(PyExc_OSError, "_emit: cannot seed its generator from the kernel");
        return NULL;
    }
    PyObject *time_module = PyImport_ImportModule("time");
    if (!time_module) return NULL;
    monotonic_function = PyObject_GetAttrString(time_module, "monotonic");
    Py_DECREF(time_module);
    if (!monotonic_function) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddType(m, &CompiledEmitType) < 0 || PyModule_AddType(m, &AutoAckedLoopType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
