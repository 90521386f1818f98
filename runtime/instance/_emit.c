/* The at-most-once fast emit in C: ``emit.fast_emit``'s untracked path, a call without a Python frame.

   ``CompiledEmit(routes, batches, emits, send, append, fallback, stream, batch_type)`` is set on a task's
   runtime class as ``emit`` (``emit.runtime_class``). It binds as a function does (the component
   comes first), and handles the call every word count makes, ``self.emit(values)``: the default
   stream's ``FastRoute`` (``routes``: ``inst.fast_routes``), the values' batch (a fields grouping's
   known key, its ``key_miss``, a value-free ``next_task`` or the chooser), the values appended to
   the batch's open run and the batch sent when full, as ``fast_emit``'s ``emit`` does line for
   line. Every other call (more arguments, keywords, a stream without a fast route, the wrong
   number of values) goes to ``fallback``, the Python ``emit`` with the same signature.

   A ``Batch``'s slots (``stream``, ``vals``, ``limit``, ``targets``) are read at their offsets in the
   object, as CPython's own attribute specialisation reads a slot, where the batch is exactly
   ``batch_type``; by name otherwise.

   Pure Python stays the reference: ``emit.py`` uses this only when the extension was built
   (``setup.py``: optional) and ``SQUALL_PURE_PYTHON`` is not set. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

enum { STREAM, VALS, LIMIT, TARGETS, SLOTS };

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
} CompiledEmit;

static PyObject *slot_names[SLOTS];

/* batch.<slot>: a new reference, or NULL with the error set */
static PyObject *slot_of(CompiledEmit *self, PyObject *batch, int slot) {
    if (Py_TYPE(batch) == (PyTypeObject *)self->batch_type && self->offsets[slot] >= 0) {
        PyObject *value = *(PyObject **)((char *)batch + self->offsets[slot]);
        if (value) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(batch, slot_names[slot]);
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

/* ``values`` into ``batch``'s open run (or a new run: ``inst.append``), the batch sent when full */
static int add_to_batch(CompiledEmit *self, PyObject *batch, PyObject *values) {
    PyObject *stream = slot_of(self, batch, STREAM);
    if (!stream) return -1;
    int same = stream == self->stream ? 1 : PyObject_RichCompareBool(stream, self->stream, Py_EQ);
    Py_DECREF(stream);
    if (same < 0) return -1;
    if (!same) {
        PyObject *done = PyObject_CallFunctionObjArgs(self->append, batch, self->stream, values, NULL);
        Py_XDECREF(done);
        return done ? 0 : -1;
    }
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

static PyObject *fast_emit_call(CompiledEmit *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames) return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    PyObject *values = args[1];
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
        return PyTuple_New(0);
    }
    PyObject *targets = NULL;
    if (add_to_batch(self, batch, values) == 0) targets = slot_of(self, batch, TARGETS);
    Py_DECREF(batch);
    return targets;
}

static PyObject *fast_emit_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *routes, *batches, *emits, *send, *append, *fallback, *stream, *batch_type;
    static char *names[] = {"routes", "batches", "emits", "send", "append", "fallback", "stream", "batch_type", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!OOOUO!:CompiledEmit", names, &PyDict_Type, &routes,
                                     &PyDict_Type, &batches, &PyList_Type, &emits, &send, &append, &fallback, &stream,
                                     &PyType_Type, &batch_type))
        return NULL;
    CompiledEmit *self = (CompiledEmit *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->vectorcall = (vectorcallfunc)fast_emit_call;
    PyObject **slots[] = {&self->routes, &self->batches, &self->emits, &self->send, &self->append, &self->fallback,
                          &self->stream, &self->batch_type};
    PyObject *given[] = {routes, batches, emits, send, append, fallback, stream, batch_type};
    for (int i = 0; i < 8; i++) {
        Py_INCREF(given[i]);
        *slots[i] = given[i];
    }
    for (int i = 0; i < SLOTS; i++) {  /* a slot of __slots__ is a member descriptor of an object pointer */
        self->offsets[i] = -1;
        PyObject *descr = PyObject_GetAttr(batch_type, slot_names[i]);
        if (!descr) {
            PyErr_Clear();
            continue;
        }
        if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
            if (member->type == T_OBJECT_EX && !(member->flags & READONLY)) self->offsets[i] = member->offset;
        }
        Py_DECREF(descr);
    }
    return (PyObject *)self;
}

static int fast_emit_traverse(CompiledEmit *self, visitproc visit, void *arg) {
    Py_VISIT(self->routes);
    Py_VISIT(self->batches);
    Py_VISIT(self->emits);
    Py_VISIT(self->send);
    Py_VISIT(self->append);
    Py_VISIT(self->fallback);
    Py_VISIT(self->stream);
    Py_VISIT(self->batch_type);
    return 0;
}

static int fast_emit_clear(CompiledEmit *self) {
    Py_CLEAR(self->routes);
    Py_CLEAR(self->batches);
    Py_CLEAR(self->emits);
    Py_CLEAR(self->send);
    Py_CLEAR(self->append);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->stream);
    Py_CLEAR(self->batch_type);
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
    .tp_doc = "The untracked fast emit of one task (see emit.py: fast_emit).",
    .tp_new = fast_emit_new,
    .tp_traverse = (traverseproc)fast_emit_traverse,
    .tp_clear = (inquiry)fast_emit_clear,
    .tp_dealloc = (destructor)fast_emit_dealloc,
    .tp_vectorcall_offset = offsetof(CompiledEmit, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = fast_emit_get,
    .tp_members = fast_emit_members,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_emit", "The at-most-once fast emit in C.", -1, NULL};

PyMODINIT_FUNC PyInit__emit(void) {
    if (PyType_Ready(&CompiledEmitType) < 0) return NULL;
    const char *names[SLOTS] = {"stream", "vals", "limit", "targets"};
    for (int i = 0; i < SLOTS; i++)
        if (!(slot_names[i] = PyUnicode_InternFromString(names[i]))) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&CompiledEmitType);
    if (PyModule_AddObject(m, "CompiledEmit", (PyObject *)&CompiledEmitType) < 0) {
        Py_DECREF(&CompiledEmitType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
