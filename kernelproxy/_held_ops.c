/* The held op's accelerator: a remote array's arithmetic and comparison operators, and
 * its __del__, for an op that a held stretch's template answers (kernelproxy/held_ops.py
 * installs them; kernelproxy/template_run.py is the reference they follow).
 *
 * Why: inside a held stretch the client only checks each op against its template and hands
 * out an array whose metadata the template gives (TemplateRun.operator). In Python that
 * check is ~2 us an op on the development VM and 4-6 us on the GPU hosts, where local
 * CuPy's whole op is 12-18 us (docs/performance.md): the client then sets a loop's pace.
 * Here the same steps run in C, one call from the user's ``a * b`` to the array.
 *
 * What it does is TemplateRun.operator, _operand_fits and TemplateRun.dropped, step for
 * step, on the same Python objects (the run's lists and dicts, the session's lock), so the
 * two paths can take turns within one run. Anything else (another operand type, a
 * subclass, no run, a run whose session turned the accelerator off) is handed to the
 * Python method it wraps; where the template's check fails, to the plain method, which
 * issues the op as the ordinary path does (the template's check has nothing left to say).
 * Nothing here reads a message from the pool.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>
#include <signal.h>

/* operand codes of an operator's plan (stretch_templates.CODE_RESULT, CODE_INPUT, CODE_SCALAR, CODE_NPSCALAR) */
enum { CODE_RESULT = 0, CODE_INPUT = 1, CODE_SCALAR = 2, CODE_NPSCALAR = 3 };

/* set once by configure() */
static PyObject *array_class;    /* kernelproxy.ndarray.ndarray */
static PyObject *scalar_types;   /* issue.UFUNC_SCALAR_TYPES (a frozenset) */
static PyObject *own_code;       /* caller._OWN_CODE: id(code) -> (code, own) */
static PyObject *own_function;   /* caller._own(code) -> bool */
static PyObject *early_send;     /* early_replay.send(session, run) */
static PyObject *numpy_generic;  /* numpy.generic */

static PyObject *s_s, *s_h, *s_m, *s_run, *s_lock, *s_acquire, *s_release, *s_template,
    *s_plans, *s_i, *s_params, *s_bound, *s_ids, *s_arrays, *s_hids, *s_results, *s_lines,
    *s_seq, *s_early_at, *s_inputs, *s_first_hid, *s_input_of, *s_input_metas, *s_meta,
    *s_undo, *s_session, *s_compiled, *s_frees, *s_closed, *s_dropped, *s_pop, *s_dtype,
    *s_str, *s_item, *s_start_operator, *s_runlock;
static PyObject *one;   /* the int 1 */

static int
intern_names(void)
{
#define NAME(var, text) if (!(var = PyUnicode_InternFromString(text))) return -1
    NAME(s_s, "_s"); NAME(s_h, "_h"); NAME(s_m, "_m"); NAME(s_run, "_run");
    NAME(s_lock, "_lock"); NAME(s_acquire, "acquire"); NAME(s_release, "release");
    NAME(s_template, "template"); NAME(s_plans, "plans"); NAME(s_i, "i");
    NAME(s_params, "params"); NAME(s_bound, "_bound"); NAME(s_ids, "ids");
    NAME(s_arrays, "arrays"); NAME(s_hids, "hids"); NAME(s_results, "results");
    NAME(s_lines, "lines"); NAME(s_seq, "_seq"); NAME(s_early_at, "early_at");
    NAME(s_inputs, "inputs"); NAME(s_first_hid, "first_hid"); NAME(s_input_of, "input_of");
    NAME(s_input_metas, "input_metas"); NAME(s_meta, "_meta"); NAME(s_undo, "_undo");
    NAME(s_session, "session"); NAME(s_compiled, "compiled"); NAME(s_frees, "frees");
    NAME(s_closed, "closed"); NAME(s_dropped, "dropped"); NAME(s_pop, "pop");
    NAME(s_dtype, "dtype"); NAME(s_str, "str"); NAME(s_item, "item");
    NAME(s_start_operator, "_start_operator"); NAME(s_runlock, "lock");
#undef NAME
    if (!(one = PyLong_FromLong(1)))
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ the user's line */

/* (code, instruction offset) of the innermost Python frame outside kernelproxy, as
 * caller.call_site: the C operator has no frame of its own, so the search starts at the
 * frame that ran ``a * b``. A new reference. */
static PyObject *
call_site(void)
{
    PyFrameObject *frame = PyEval_GetFrame();   /* borrowed */
    Py_XINCREF(frame);
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);   /* new */
        PyObject *key = PyLong_FromVoidPtr(code);
        if (key == NULL) {
            Py_DECREF(code);
            Py_DECREF(frame);
            return NULL;
        }
        PyObject *entry = PyDict_GetItemWithError(own_code, key);   /* borrowed */
        Py_DECREF(key);
        int own;
        if (entry != NULL && PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 2
                && PyTuple_GET_ITEM(entry, 0) == (PyObject *)code) {
            own = PyObject_IsTrue(PyTuple_GET_ITEM(entry, 1));
        } else if (PyErr_Occurred()) {
            own = -1;
        } else {
            PyObject *answer = PyObject_CallOneArg(own_function, (PyObject *)code);
            own = answer == NULL ? -1 : PyObject_IsTrue(answer);
            Py_XDECREF(answer);
        }
        if (own < 0) {
            Py_DECREF(code);
            Py_DECREF(frame);
            return NULL;
        }
        if (!own) {
            PyObject *offset = PyLong_FromLong(PyFrame_GetLasti(frame));
            Py_DECREF(frame);
            if (offset == NULL) {
                Py_DECREF(code);
                return NULL;
            }
            PyObject *site = PyTuple_New(2);
            if (site == NULL) {
                Py_DECREF(code);
                Py_DECREF(offset);
                return NULL;
            }
            PyTuple_SET_ITEM(site, 0, (PyObject *)code);   /* (both references given) */
            PyTuple_SET_ITEM(site, 1, offset);
            return site;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(frame);   /* new */
        Py_DECREF(frame);
        frame = back;
    }
    return Py_BuildValue("(Oi)", Py_None, 0);
}

/* ------------------------------------------------------------------ small helpers */

/* the session's lock's class (threading.RLock's) and its acquire and release, as method
 * descriptors: called without looking them up on each lock (learnt from the first lock) */
static PyTypeObject *lock_type;
static PyObject *lock_acquire, *lock_release;

static void
learn_lock(PyObject *lock)
{
    PyObject *acquire = PyObject_GetAttr((PyObject *)Py_TYPE(lock), s_acquire);
    PyObject *release = acquire ? PyObject_GetAttr((PyObject *)Py_TYPE(lock), s_release) : NULL;
    if (acquire != NULL && release != NULL && Py_IS_TYPE(acquire, &PyMethodDescr_Type)
            && Py_IS_TYPE(release, &PyMethodDescr_Type)
            && Py_TYPE(lock)->tp_dictoffset == 0) {   /* (no instance dict to override them) */
        lock_acquire = acquire;   /* (kept for good, with the class) */
        lock_release = release;
        lock_type = (PyTypeObject *)Py_NewRef(Py_TYPE(lock));
        return;
    }
    Py_XDECREF(acquire);
    Py_XDECREF(release);
    PyErr_Clear();
}

static int
lock_call(PyObject *lock, PyObject *method, int blocking)
{
    /* lock.acquire() / lock.acquire(False) / lock.release(); for acquire, 1 where taken */
    PyObject *answer;
    if (lock_type == NULL)
        learn_lock(lock);
    if (Py_TYPE(lock) == lock_type) {
        PyObject *args[2] = {lock, Py_False};
        answer = PyObject_Vectorcall(method == s_acquire ? lock_acquire : lock_release, args,
                                     blocking ? 1 : 2, NULL);
    } else {
        answer = blocking ? PyObject_CallMethodNoArgs(lock, method)
                          : PyObject_CallMethodOneArg(lock, method, Py_False);
    }
    if (answer == NULL)
        return -1;
    int taken = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return taken;
}

/* ------------------------------------------------------------------ slots read in place */

/* A TemplateRun's and an array's attributes are slots (__slots__): their member descriptors
 * say where in the object each lives, so they are read and written there, without
 * getattr's lookup through the type (most of an op's cost in C was those lookups). Only for
 * objects of exactly the classes learnt (learn_slots); anything else takes getattr. */
typedef struct {
    PyObject *name;       /* interned: compared by identity with the s_* names */
    Py_ssize_t offset;
} SlotEntry;

#define MAX_SLOTS 32
static PyTypeObject *run_type;     /* kernelproxy.template_run.TemplateRun */
static SlotEntry run_slots[MAX_SLOTS];
static int n_run_slots;
static PyTypeObject *array_type;   /* array_class's, as a type */
static SlotEntry array_slots[MAX_SLOTS];
static int n_array_slots;
static PyTypeObject *template_type;   /* kernelproxy.stretch_templates.StretchTemplate */
static SlotEntry template_slots[MAX_SLOTS];
static int n_template_slots;

/* Learn the object slots *cls* defines itself (its __slots__' member descriptors). */
static int
learn_slots(PyTypeObject *cls, SlotEntry *table, int *count)
{
    PyObject *dict = cls->tp_dict;   /* borrowed */
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    int n = 0;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!Py_IS_TYPE(value, &PyMemberDescr_Type) || !PyUnicode_Check(key))
            continue;
        PyMemberDef *def = ((PyMemberDescrObject *)value)->d_member;
        if (def->type != T_OBJECT_EX || (def->flags & READONLY))
            continue;
        if (n == MAX_SLOTS) {
            PyErr_SetString(PyExc_ValueError, "too many slots");
            return -1;
        }
        PyObject *name = Py_NewRef(key);
        PyUnicode_InternInPlace(&name);
        Py_XSETREF(table[n].name, name);
        table[n].offset = def->offset;
        n++;
    }
    *count = n;
    return 0;
}

/* Where *obj*'s slot *name* lives, or NULL: not one of the classes learnt, or no such slot. */
static inline PyObject **
slot_of(PyObject *obj, PyObject *name)
{
    PyTypeObject *type = Py_TYPE(obj);
    SlotEntry *table;
    int n;
    if (type == run_type) {
        table = run_slots;
        n = n_run_slots;
    } else if (type == array_type) {
        table = array_slots;
        n = n_array_slots;
    } else if (type == template_type) {
        table = template_slots;
        n = n_template_slots;
    } else {
        return NULL;
    }
    for (int k = 0; k < n; k++)
        if (table[k].name == name)
            return (PyObject **)((char *)obj + table[k].offset);
    return NULL;
}

/* A call site's cache of where a slot lives: the class it was found in, and its offset
 * (classes learnt are never let go, so the address stays theirs). */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset;
} SiteCache;

static SiteCache k_s_s, k_s_h, k_s_m, k_s_run, k_s_runlock,
    k_s_template, k_s_plans, k_s_i, k_s_params, k_s_bound, k_s_ids, k_s_arrays, k_s_hids,
    k_s_results, k_s_lines, k_s_seq, k_s_early_at, k_s_inputs, k_s_first_hid, k_s_input_of,
    k_s_input_metas, k_s_compiled, k_s_frees, k_s_closed,
    k_s_dtype, k_s_str;

/* getattr(obj, name), a new reference (a slot read in place where it is one); *cache*: the
 * call site's (NULL: none) */
static inline PyObject *
get_attr_at(PyObject *obj, PyObject *name, SiteCache *cache)
{
    PyObject **where;
    if (cache != NULL && Py_TYPE(obj) == cache->type) {
        where = (PyObject **)((char *)obj + cache->offset);
    } else {
        where = slot_of(obj, name);
        if (where == NULL)
            return PyObject_GetAttr(obj, name);
        if (cache != NULL) {
            cache->type = Py_TYPE(obj);
            cache->offset = (char *)where - (char *)obj;
        }
    }
    if (*where == NULL) {
        PyErr_SetObject(PyExc_AttributeError, name);
        return NULL;
    }
    return Py_NewRef(*where);
}

/* get_attr_at with the cache of the name's slot (k_<name>: one slot of one class a name) */
#define get_attr(obj, name) get_attr_at((obj), (name), &k_##name)

/* setattr(obj, name, value) (a slot written in place where it is one); *cache* as above */
static inline int
set_attr_at(PyObject *obj, PyObject *name, PyObject *value, SiteCache *cache)
{
    PyObject **where;
    if (Py_TYPE(obj) == cache->type) {
        where = (PyObject **)((char *)obj + cache->offset);
    } else {
        where = slot_of(obj, name);
        if (where == NULL)
            return PyObject_SetAttr(obj, name, value);
        cache->type = Py_TYPE(obj);
        cache->offset = (char *)where - (char *)obj;
    }
    PyObject *old = *where;
    *where = Py_NewRef(value);
    Py_XDECREF(old);
    return 0;
}

#define set_attr(obj, name, value) set_attr_at((obj), (name), (value), &k_##name)

/* getattr that leaves a new reference in *out; -1 on error */
#define GET(out, obj, name) do { if (!((out) = get_attr((obj), name))) goto error; } while (0)

/* ------------------------------------------------------------------ an operand's check */

/* 1: *value* is what the plan's (code, arg) has there (an input met the first time bound
 * to its slot, a parameter's value kept in *params*); 0: it is not; -1: an error. As
 * TemplateRun._operand_fits. */
static int
operand_fits(PyObject *run, PyObject *session, PyObject *value, PyObject *code_arg,
             PyObject *params)
{
    if (!PyTuple_Check(code_arg) || PyTuple_GET_SIZE(code_arg) != 2)
        return 0;
    long code = PyLong_AsLong(PyTuple_GET_ITEM(code_arg, 0));
    if (code == -1 && PyErr_Occurred())
        return -1;
    PyObject *arg = PyTuple_GET_ITEM(code_arg, 1);
    PyObject *vs = NULL, *hid = NULL, *list = NULL, *have = NULL, *tmp = NULL;
    int result = 0;

    if (code == CODE_SCALAR) {
        if ((PyObject *)Py_TYPE(value) != arg)
            return 0;
        if (arg == (PyObject *)&PyFloat_Type) {   /* a NaN is no parameter: is_param */
            double d = PyFloat_AS_DOUBLE(value);
            if (d != d)
                return 0;
        }
        if (arg == (PyObject *)&PyComplex_Type) {
            Py_complex c = PyComplex_AsCComplex(value);
            if (c.real != c.real || c.imag != c.imag)
                return 0;
        }
        if (arg == (PyObject *)&PyLong_Type) {   /* an int too large is no parameter: is_param */
            int overflow = 0;
            PyLong_AsLongLongAndOverflow(value, &overflow);
            if (PyErr_Occurred())
                return -1;
            if (overflow < 0)
                return 0;
            if (overflow > 0) {
                PyLong_AsUnsignedLongLong(value);
                if (PyErr_Occurred()) {
                    if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                        return -1;
                    PyErr_Clear();
                    return 0;
                }
            }
        }
        return PyList_Append(params, value) < 0 ? -1 : 1;
    }
    if (code == CODE_RESULT || code == CODE_INPUT) {
        if ((PyObject *)Py_TYPE(value) != array_class)
            return 0;
        GET(vs, value, s_s);
        if (vs != session)
            goto done;
        GET(hid, value, s_h);
        if (code == CODE_RESULT) {
            GET(list, run, s_hids);
            Py_ssize_t j = PyLong_AsSsize_t(arg);
            if (j == -1 && PyErr_Occurred())
                goto error;
            if (!PyList_Check(list) || j < 0 || j >= PyList_GET_SIZE(list))
                goto done;
            result = PyObject_RichCompareBool(hid, PyList_GET_ITEM(list, j), Py_EQ);
            goto done;
        }
        /* an input */
        GET(list, run, s_inputs);
        Py_ssize_t n = PyLong_AsSsize_t(arg);
        if (n == -1 && PyErr_Occurred())
            goto error;
        if (!PyList_Check(list) || n < 0 || n >= PyList_GET_SIZE(list))
            goto done;
        have = PyList_GET_ITEM(list, n);
        Py_INCREF(have);
        if (have != Py_None) {
            result = PyObject_RichCompareBool(have, hid, Py_EQ);
            goto done;
        }
        /* met first: not a result of this run, not another slot's input, its metadata the
         * template's */
        GET(tmp, run, s_first_hid);
        int later = PyObject_RichCompareBool(hid, tmp, Py_GE);
        Py_CLEAR(tmp);
        if (later != 0) {
            result = later < 0 ? -1 : 0;
            goto done;
        }
        GET(tmp, run, s_input_of);
        int bound = PySequence_Contains(tmp, hid);
        if (bound != 0) {
            result = bound < 0 ? -1 : 0;
            goto done;
        }
        PyObject *meta = PyObject_CallMethodObjArgs(run, s_meta, value, hid, NULL);
        if (meta == NULL)
            goto error;
        PyObject *template = get_attr(run, s_template);
        PyObject *metas = template ? get_attr(template, s_input_metas) : NULL;
        Py_XDECREF(template);
        PyObject *want = metas ? PySequence_GetItem(metas, n) : NULL;
        Py_XDECREF(metas);
        if (want == NULL) {
            Py_DECREF(meta);
            goto error;
        }
        int same = PyObject_RichCompareBool(meta, want, Py_EQ);
        Py_DECREF(meta);
        Py_DECREF(want);
        if (same != 1) {
            result = same;
            goto done;
        }
        PyObject *slot = PyLong_FromSsize_t(n);
        if (slot == NULL)
            goto error;
        PyObject *bound_list = get_attr(run, s_bound);
        int failed = PyList_SetItem(list, n, Py_NewRef(hid)) < 0
            || PyObject_SetItem(tmp, hid, slot) < 0
            || bound_list == NULL || PyList_Append(bound_list, slot) < 0;
        Py_DECREF(slot);
        Py_XDECREF(bound_list);
        result = failed ? -1 : 1;
        goto done;
    }
    if (code == CODE_NPSCALAR) {   /* a NumPy scalar of the recorded dtype */
        int is = PyObject_IsInstance(value, numpy_generic);
        if (is != 1)
            return is;
        PyObject *dtype = get_attr(value, s_dtype);
        PyObject *text = dtype ? get_attr(dtype, s_str) : NULL;
        Py_XDECREF(dtype);
        if (text == NULL)
            return -1;
        int same = PyObject_RichCompareBool(text, arg, Py_EQ);
        Py_DECREF(text);
        if (same != 1)
            return same;
        PyObject *item = PyObject_CallMethodNoArgs(value, s_item);
        if (item == NULL)
            return -1;
        /* a NaN is no parameter (is_param; not RichCompareBool, which takes an object
           as equal to itself) */
        int nan = 0;
        if (PyFloat_Check(item)) {
            double d = PyFloat_AS_DOUBLE(item);
            nan = d != d;
        } else if (PyComplex_Check(item)) {
            Py_complex c = PyComplex_AsCComplex(item);
            nan = c.real != c.real || c.imag != c.imag;
        }
        if (nan) {
            Py_DECREF(item);
            return 0;
        }
        int failed = PyList_Append(params, item) < 0;
        Py_DECREF(item);
        return failed ? -1 : 1;
    }
    return 0;

error:
    result = -1;
done:
    Py_XDECREF(vs);
    Py_XDECREF(hid);
    Py_XDECREF(list);
    Py_XDECREF(have);
    Py_XDECREF(tmp);
    return result;
}

/* ------------------------------------------------------------------ the operator */

/* TemplateRun.operator(name, operands, label) with *run* the session's run: the result
 * array (a new reference), Py_None (a new reference) where the template's next op is not
 * this one, NULL on an error. *starting*: *run* is not the session's yet, but the one its
 * first op would start (Session._start_operator, which makes it the session's once this
 * takes the op): the result's handle is the run's first (its first_hid, unknown before). */
static PyObject *
held_operator(PyObject *run, PyObject *session, PyObject *name, PyObject *const *operands,
              Py_ssize_t n_operands, PyObject *label, int starting)
{
    PyObject *lock = get_attr(run, s_runlock);   /* (the session's: TemplateRun.lock) */
    if (lock == NULL)
        return NULL;
    if (lock_call(lock, s_acquire, 1) < 0) {
        Py_DECREF(lock);
        return NULL;
    }
    PyObject *result = NULL;
    PyObject *current = NULL, *template = NULL, *plans = NULL, *params = NULL, *bound = NULL,
             *ids = NULL, *hid = NULL, *array = NULL, *arrays = NULL, *ref = NULL, *list = NULL,
             *site = NULL, *line = NULL, *seq = NULL, *next = NULL, *early_at = NULL;

    if (!starting) {
        GET(current, session, s_run);
        if (current != run)
            goto miss;
    }
    PyObject *i_obj = get_attr(run, s_i);
    if (i_obj == NULL)
        goto error;
    Py_ssize_t i = PyLong_AsSsize_t(i_obj);
    Py_DECREF(i_obj);
    if (i == -1 && PyErr_Occurred())
        goto error;
    GET(template, run, s_template);
    GET(plans, template, s_plans);
    if (!PyList_Check(plans) || i < 0 || i >= PyList_GET_SIZE(plans))
        goto miss;
    PyObject *plan = PyList_GET_ITEM(plans, i);   /* borrowed: plans is held */
    if (plan == Py_None || !PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 4)
        goto miss;
    int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(plan, 0), name, Py_EQ);
    if (same < 0)
        goto error;
    if (!same)
        goto miss;
    PyObject *codes = PyTuple_GET_ITEM(plan, 1);
    if (!PyTuple_Check(codes) || PyTuple_GET_SIZE(codes) != n_operands || n_operands < 1
            || n_operands > 2)
        goto miss;
    GET(params, run, s_params);
    GET(bound, run, s_bound);
    if (!PyList_Check(params) || !PyList_Check(bound))
        goto miss;
    Py_ssize_t mark = PyList_GET_SIZE(params);
    if (PyList_GET_SIZE(bound) && PyList_SetSlice(bound, 0, PY_SSIZE_T_MAX, NULL) < 0)
        goto error;
    int fits = operand_fits(run, session, operands[0], PyTuple_GET_ITEM(codes, 0), params);
    if (fits == 1 && n_operands == 2)
        fits = operand_fits(run, session, operands[1], PyTuple_GET_ITEM(codes, 1), params);
    if (fits != 1) {
        if (fits < 0)
            goto error;
        /* not the template's op: nothing of it stays */
        if (PyList_SetSlice(params, mark, PY_SSIZE_T_MAX, NULL) < 0)
            goto error;
        PyObject *undone = PyObject_CallMethodNoArgs(run, s_undo);
        if (undone == NULL)
            goto error;
        Py_DECREF(undone);
        goto miss;
    }
    /* committed */
    if (PyList_GET_SIZE(bound) && PyList_SetSlice(bound, 0, PY_SSIZE_T_MAX, NULL) < 0)
        goto error;
    GET(ids, run, s_ids);
    hid = PyIter_Next(ids);
    if (hid == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the session's handle ids ran out");
        goto error;
    }
    if (starting && set_attr(run, s_first_hid, hid) < 0)
        goto error;
    PyTypeObject *cls = (PyTypeObject *)array_class;
    array = cls->tp_alloc(cls, 0);   /* object.__new__(ndarray): no __init__ */
    if (array == NULL)
        goto error;
    if (set_attr(array, s_s, session) < 0 || set_attr(array, s_h, hid) < 0
            || set_attr(array, s_m, PyTuple_GET_ITEM(plan, 3)) < 0)
        goto error;
    GET(arrays, run, s_arrays);   /* (the session's: TemplateRun.arrays) */
    ref = PyWeakref_NewRef(array, NULL);
    if (ref == NULL || PyObject_SetItem(arrays, hid, ref) < 0)
        goto error;
    GET(list, run, s_hids);
    if (PyList_Append(list, hid) < 0)
        goto error;
    Py_CLEAR(list);
    GET(list, run, s_results);
    if (PyList_Append(list, hid) < 0)
        goto error;
    Py_CLEAR(list);
    site = call_site();
    if (site == NULL)
        goto error;
    line = PyTuple_Pack(2, label, site);
    GET(list, run, s_lines);
    if (line == NULL || PyList_Append(list, line) < 0)
        goto error;
    GET(seq, session, s_seq);
    next = PyNumber_Add(seq, one);
    if (next == NULL || set_attr(session, s_seq, next) < 0)
        goto error;
    Py_CLEAR(next);
    next = PyLong_FromSsize_t(i + 1);
    if (next == NULL || set_attr(run, s_i, next) < 0)
        goto error;
    GET(early_at, template, s_early_at);
    if (early_at != Py_None) {
        int now = PyObject_RichCompareBool(early_at, next, Py_EQ);
        if (now < 0)
            goto error;
        if (now) {
            PyObject *sent = PyObject_CallFunctionObjArgs(early_send, session, run, NULL);
            if (sent == NULL)
                goto error;
            Py_DECREF(sent);
        }
    }
    result = Py_NewRef(array);
    goto out;

miss:
    result = Py_NewRef(Py_None);
    goto out;
error:
    result = NULL;
out:
    Py_XDECREF(current); Py_XDECREF(template); Py_XDECREF(plans); Py_XDECREF(params);
    Py_XDECREF(bound); Py_XDECREF(ids); Py_XDECREF(hid); Py_XDECREF(array);
    Py_XDECREF(arrays); Py_XDECREF(ref); Py_XDECREF(list); Py_XDECREF(site);
    Py_XDECREF(line); Py_XDECREF(seq); Py_XDECREF(next); Py_XDECREF(early_at);
    {
        /* release the lock, keeping an error raised before it */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        int released = lock_call(lock, s_release, 1);
        Py_DECREF(lock);
        if (type != NULL) {
            PyErr_Restore(type, value, traceback);
        } else if (released < 0) {
            Py_XDECREF(result);
            return NULL;
        }
    }
    return result;
}

/* ------------------------------------------------------------------ the method objects */

/* A method object that binds as a Python function does (Py_TPFLAGS_METHOD_DESCRIPTOR:
 * ``a * b`` calls it with (a, b) and no bound method is made). */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;       /* the operator's name ("mul") */
    PyObject *label;      /* its label for errors ("operator *") */
    PyObject *fallback;   /* the Python method it stands in for */
    PyObject *plain;      /* the same, not asking the template (its check failed here) */
    int reflected;        /* __r<name>__: the operands swapped */
} HeldMethod;

static PyObject *
binary_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    HeldMethod *self = (HeldMethod *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 2 || kwnames != NULL)
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    PyObject *me = args[0], *other = args[1];
    PyObject *kind = (PyObject *)Py_TYPE(other);
    if ((PyObject *)Py_TYPE(me) != array_class)
        return PyObject_Vectorcall(self->fallback, args, nargsf, NULL);
    if (kind != array_class) {
        int scalar = PySet_Contains(scalar_types, kind);
        if (scalar < 0)
            return NULL;
        if (!scalar)
            return PyObject_Vectorcall(self->fallback, args, nargsf, NULL);
    }
    PyObject *session = get_attr(me, s_s);
    if (session == NULL)
        return NULL;
    PyObject *operands[2];
    if (self->reflected) {
        operands[0] = other;
        operands[1] = me;
    } else {
        operands[0] = me;
        operands[1] = other;
    }
    PyObject *run = get_attr(session, s_run);
    if (run == NULL) {
        Py_DECREF(session);
        return NULL;
    }
    if (run == Py_None) {
        /* perhaps a held stretch's first op: the session starts its run here, or says
         * None (the Python method then issues the op: Session._start_operator) */
        Py_DECREF(run);
        PyObject *call[5] = {session, self->name, operands[0], operands[1], self->label};
        PyObject *started = PyObject_VectorcallMethod(s_start_operator, call, 5, NULL);
        Py_DECREF(session);
        if (started != Py_None)
            return started;   /* the array, or NULL on an error */
        Py_DECREF(started);
        return PyObject_Vectorcall(self->fallback, args, nargsf, NULL);
    }
    PyObject *flag = get_attr(run, s_compiled);
    int on = flag == NULL ? -1 : PyObject_IsTrue(flag);
    Py_XDECREF(flag);
    if (on != 1) {
        Py_DECREF(run);
        Py_DECREF(session);
        if (on < 0)
            return NULL;
        return PyObject_Vectorcall(self->fallback, args, nargsf, NULL);
    }
    PyObject *result = held_operator(run, session, self->name, operands, 2, self->label, 0);
    Py_DECREF(run);
    Py_DECREF(session);
    if (result != Py_None)
        return result;   /* the array, or NULL on an error */
    Py_DECREF(result);
    return PyObject_Vectorcall(self->plain, args, nargsf, NULL);
}

/* ndarray.__del__: a result of the session's run dropped is a free of that run
 * (TemplateRun.dropped); any other array the session's release, as the Python __del__. */
static PyObject *
del_call(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    HeldMethod *self = (HeldMethod *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1 || kwnames != NULL)
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    PyObject *me = args[0];
    PyObject *session = NULL, *hid = NULL, *run = NULL, *meta = NULL, *first = NULL,
             *lock = NULL, *answer = NULL;
    session = get_attr(me, s_s);
    if (session == NULL)
        goto swallow;
    hid = get_attr(me, s_h);
    if (hid == NULL)
        goto swallow;
    run = get_attr(session, s_run);
    if (run == NULL)
        goto swallow;
    meta = get_attr(me, s_m);
    if (meta == NULL)
        goto swallow;
    PyObject *unread = meta == Py_None ? Py_True : Py_False;
    if (run != Py_None && hid != Py_None) {
        first = get_attr(run, s_first_hid);
        if (first == NULL)
            goto swallow;
        int later = PyObject_RichCompareBool(hid, first, Py_GE);
        if (later < 0)
            goto swallow;
        if (later) {
            PyObject *flag = get_attr(run, s_compiled);
            int on = flag == NULL ? -1 : PyObject_IsTrue(flag);
            Py_XDECREF(flag);
            if (on < 0)
                goto swallow;
            if (!on) {
                answer = PyObject_CallMethodObjArgs(run, s_dropped, hid, unread, NULL);
                goto done;
            }
            /* TemplateRun.dropped */
            lock = get_attr(run, s_runlock);   /* (the session's) */
            if (lock == NULL)
                goto swallow;
            int taken = lock_call(lock, s_acquire, 0);
            if (taken < 0)
                goto swallow;
            if (taken) {
                int ours = 0, failed = 0;
                PyObject *current = get_attr(session, s_run);
                if (current == NULL) {
                    failed = 1;
                } else if (current == run) {
                    ours = 1;
                    PyObject *i = get_attr(run, s_i);
                    PyObject *frees = get_attr(run, s_frees);
                    PyObject *entry = i ? PyTuple_Pack(2, i, hid) : NULL;
                    PyObject *arrays = get_attr(run, s_arrays);   /* (the session's) */
                    failed = entry == NULL || frees == NULL || arrays == NULL
                        || PyList_Append(frees, entry) < 0;
                    if (!failed && PyDict_CheckExact(arrays)) {   /* arrays.pop(hid, None) */
                        int has = PyDict_Contains(arrays, hid);
                        failed = has < 0 || (has == 1 && PyDict_DelItem(arrays, hid) < 0);
                    } else if (!failed) {
                        PyObject *gone = PyObject_CallMethodObjArgs(arrays, s_pop, hid, Py_None, NULL);
                        failed = gone == NULL;
                        Py_XDECREF(gone);
                    }
                    Py_XDECREF(i); Py_XDECREF(frees); Py_XDECREF(entry); Py_XDECREF(arrays);
                }
                Py_XDECREF(current);
                PyObject *type, *value, *traceback;
                PyErr_Fetch(&type, &value, &traceback);
                int released = lock_call(lock, s_release, 1);
                PyErr_Restore(type, value, traceback);
                if (failed || released < 0)
                    goto swallow;
                if (ours)
                    goto done;
            }
            answer = PyObject_CallMethodObjArgs(session, s_release, hid, unread, NULL);
            goto done;
        }
    }
    if (hid != Py_None) {
        PyObject *closed = get_attr(session, s_closed);
        int is = closed == NULL ? -1 : PyObject_IsTrue(closed);
        Py_XDECREF(closed);
        if (is < 0)
            goto swallow;
        if (!is)
            answer = PyObject_CallMethodObjArgs(session, s_release, hid, unread, NULL);
    }
done:
    if (answer == NULL && PyErr_Occurred())
        goto swallow;
    goto out;
swallow:
    /* interpreter shutdown or a half-built object: as the Python __del__'s except Exception */
    if (PyErr_ExceptionMatches(PyExc_Exception))
        PyErr_Clear();
out:
    Py_XDECREF(session); Py_XDECREF(hid); Py_XDECREF(run); Py_XDECREF(meta);
    Py_XDECREF(first); Py_XDECREF(lock); Py_XDECREF(answer);
    if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
        /* a SIGINT that landed in the Python this finaliser called (Session.release): raised
         * here it is "ignored" with the finaliser and lost, and a stopped cell ran on (a
         * suite run lost one of 24 stops). Delivered again once the finaliser is done, as
         * kernelproxy/interrupts.py does for one in a Python __del__ */
        PyErr_Clear();
        PyErr_SetInterruptEx(SIGINT);
        Py_RETURN_NONE;
    }
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static void
held_method_dealloc(HeldMethod *self)
{
    Py_XDECREF(self->name);
    Py_XDECREF(self->label);
    Py_XDECREF(self->fallback);
    Py_XDECREF(self->plain);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
held_method_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *
held_method_repr(HeldMethod *self)
{
    return PyUnicode_FromFormat("<held-op accelerator of %R>", self->fallback);
}

static PyObject *
held_method_getattro(PyObject *self, PyObject *name)
{
    /* __name__, __qualname__, __doc__, __module__: the wrapped Python method's */
    PyObject *found = PyObject_GenericGetAttr(self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
        return found;
    PyErr_Clear();
    return PyObject_GetAttr(((HeldMethod *)self)->fallback, name);
}

static PyMemberDef held_method_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(HeldMethod, fallback), READONLY,
     "the Python method this accelerates"},
    {NULL},
};

static PyTypeObject HeldMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kernelproxy._held_ops.HeldMethod",
    .tp_basicsize = sizeof(HeldMethod),
    .tp_dealloc = (destructor)held_method_dealloc,
    .tp_vectorcall_offset = offsetof(HeldMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_repr = (reprfunc)held_method_repr,
    .tp_getattro = held_method_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A remote array's operator or __del__, with a held stretch's op in C.",
    .tp_members = held_method_members,
    .tp_descr_get = held_method_get,
};

static PyObject *
new_method(vectorcallfunc call, PyObject *name, PyObject *label, PyObject *fallback,
           PyObject *plain, int reflected)
{
    HeldMethod *self = PyObject_New(HeldMethod, &HeldMethodType);
    if (self == NULL)
        return NULL;
    self->vectorcall = call;
    self->name = Py_XNewRef(name);
    self->label = Py_XNewRef(label);
    self->fallback = Py_NewRef(fallback);
    self->plain = Py_XNewRef(plain);
    self->reflected = reflected;
    return (PyObject *)self;
}

/* ------------------------------------------------------------------ the module */

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *cls, *scalars, *codes, *own, *send, *generic;
    if (!PyArg_ParseTuple(args, "O!O!O!OOO:configure", &PyType_Type, &cls, &PyFrozenSet_Type,
                          &scalars, &PyDict_Type, &codes, &own, &send, &generic))
        return NULL;
    Py_XSETREF(array_class, Py_NewRef(cls));
    Py_XSETREF(scalar_types, Py_NewRef(scalars));
    Py_XSETREF(own_code, Py_NewRef(codes));
    Py_XSETREF(own_function, Py_NewRef(own));
    Py_XSETREF(early_send, Py_NewRef(send));
    Py_XSETREF(numpy_generic, Py_NewRef(generic));
    array_type = NULL;   /* (its slots learnt anew) */
    if (learn_slots((PyTypeObject *)cls, array_slots, &n_array_slots) < 0)
        return NULL;
    array_type = (PyTypeObject *)cls;
    Py_RETURN_NONE;
}

static PyObject *
run_class_entry(PyObject *module, PyObject *args)
{
    /* run_class(TemplateRun, StretchTemplate): their slots are read in place (the classes
     * are kept for good: a site's cache may name them) */
    PyObject *run, *template;
    if (!PyArg_ParseTuple(args, "O!O!:run_class", &PyType_Type, &run, &PyType_Type, &template))
        return NULL;
    run_type = template_type = NULL;
    if (learn_slots((PyTypeObject *)run, run_slots, &n_run_slots) < 0
            || learn_slots((PyTypeObject *)template, template_slots, &n_template_slots) < 0)
        return NULL;
    run_type = (PyTypeObject *)Py_NewRef(run);
    template_type = (PyTypeObject *)Py_NewRef(template);
    Py_RETURN_NONE;
}

static PyObject *
binary(PyObject *module, PyObject *args)
{
    PyObject *name, *label, *fallback, *plain;
    int reflected;
    if (!PyArg_ParseTuple(args, "UUOOp:binary", &name, &label, &fallback, &plain, &reflected))
        return NULL;
    return new_method(binary_call, name, label, fallback, plain, reflected);
}

static PyObject *
finaliser(PyObject *module, PyObject *fallback)
{
    return new_method(del_call, NULL, NULL, fallback, NULL, 0);
}

static PyObject *
operator_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* operator(run, name, operands, label): TemplateRun.operator in C (for tests) */
    if (nargs != 4 || !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "operator(run, name, operands: tuple, label)");
        return NULL;
    }
    PyObject *session = PyObject_GetAttr(args[0], s_session);
    if (session == NULL)
        return NULL;
    PyObject *result = held_operator(args[0], session, args[1], &PyTuple_GET_ITEM(args[2], 0),
                                     PyTuple_GET_SIZE(args[2]), args[3], 0);
    Py_DECREF(session);
    return result;
}

static PyObject *
start_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* start(run, session, name, a, b, label): the first op of *run*, a run its session is
     * about to start (Session._start_operator): its result array, or None where the
     * template's first op is not this one */
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "start(run, session, name, a, b, label)");
        return NULL;
    }
    return held_operator(args[0], args[1], args[2], &args[3], 2, args[5], 1);
}

static PyObject *
call_site_entry(PyObject *module, PyObject *unused)
{
    return call_site();
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(array_class, scalar_types, own_code, own, early_send, numpy_generic)"},
    {"binary", binary, METH_VARARGS,
     "binary(name, label, fallback, plain, reflected): an operator's method"},
    {"finaliser", finaliser, METH_O, "finaliser(fallback): an array's __del__"},
    {"operator", (PyCFunction)(void (*)(void))operator_entry, METH_FASTCALL,
     "operator(run, name, operands, label): TemplateRun.operator, in C"},
    {"start", (PyCFunction)(void (*)(void))start_entry, METH_FASTCALL,
     "start(run, session, name, a, b, label): a run's first op, before the run is the session's"},
    {"run_class", run_class_entry, METH_VARARGS,
     "run_class(TemplateRun, StretchTemplate): the classes whose slots are read in place"},
    {"call_site", call_site_entry, METH_NOARGS,
     "call_site(): caller.call_site of the running Python frame"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kernelproxy._held_ops",
    "The held op's accelerator (kernelproxy/held_ops.py).", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__held_ops(void)
{
    if (PyType_Ready(&HeldMethodType) < 0 || intern_names() < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    PyObject *names = Py_BuildValue("[sssssss]", "configure", "binary", "finaliser", "operator",
                                    "start", "run_class", "call_site");
    if (names == NULL || PyModule_AddObject(module, "__all__", names) < 0) {
        Py_XDECREF(names);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
