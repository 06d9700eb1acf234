/* pasarela._fastcall: CPython entry points for the two hottest calls of the C core, seal_json and open_post, and
 * for the copying out of a batch's requests into the objects that hold them (rows; seal_json makes its one row;
 * seal_rows seals large ones into them).
 * seal_payload writes a payload's text (stringify.c) and seals it in one call; open_post reads the request's
 * headers and builds the opened payload (parse.c) in the call that opens it.
 *
 * Why this exists beside the cffi module: through cffi, a seal is several Python-level operations (the call's
 * argument conversions, reads of the workspace's fields, the copy of the request out of it, the Sealed made from a
 * tuple), and for small requests those cost as much as the C work itself; a batch paid them per request. Here one
 * call does all of it, and makes the Sealed objects as tuple.__new__ would, with the class's own allocator and no
 * tuple in between. The C core is the same code (the cffi module's own functions, reached through the addresses
 * connect() is given), so the bytes are the same: only the marshalling differs. Requests too large to share buffers
 * need no copy at all: seal_rows() makes their bytes objects first and the core (pasarela_seal_batch) seals each
 * straight into its own. What each step saved, measured: CHANGELOG.md, "How pasarela got its speed".
 * CPython only (PyPy runs cffi natively); private to python/pasarela/_binding.py, which passes the addresses of
 * objects it keeps alive, and the credentials as their owning object (begin_call_with_credentials).
 *
 * The limited API of CPython 3.10 (the wheel is cp310-abi3; csrc/build_ffi.py defines Py_LIMITED_API), for
 * METH_FASTCALL: the arguments are read from the caller's own array, where METH_VARARGS would make a tuple of them
 * for every call, an object the cyclic GC counts. No mutable globals: the function pointers live in the module's
 * state, and so do the keys the reader of opened payloads remembers, which only code holding the GIL touches
 * (parse.h; a free-threaded build gives each call its own). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <string.h>

#include "clock.h"
#include "counting.h"
#include "pasarela.h"
#include "parse.h"
#include "stringify.h"

typedef PyObject *const *call_args; /* a METH_FASTCALL call's arguments, which its caller keeps alive */

typedef int (*seal_json_fn)(const pasarela_credentials *, pasarela_workspace *, uint64_t, const uint8_t *, size_t,
                            unsigned, const uint8_t *);
typedef int (*open_request_fn)(const pasarela_credentials *, pasarela_workspace *, const char *, size_t, double,
                               double, const char *, size_t, const char *, size_t);
typedef int (*canonicalize_fn)(const uint8_t *, size_t, unsigned, uint8_t *, size_t, size_t *, void *, size_t,
                               size_t *, unsigned *);
typedef size_t (*seal_batch_fn)(const pasarela_credentials *const *, uint64_t, const uint8_t *, const size_t *, size_t,
                                const uint8_t *, pasarela_workspace *, char *const *, int *);
typedef size_t (*seal_json_batch_fn)(const pasarela_credentials *const *, uint64_t, const uint8_t *, const size_t *,
                                     size_t, unsigned, const uint8_t *, pasarela_workspace *, int *, size_t *, size_t *,
                                     unsigned *);

typedef struct {
    seal_json_fn seal_json;
    open_request_fn open_request;
    open_request_fn open_request_as_sent;
    canonicalize_fn canonicalize;
    seal_batch_fn seal_batch;
    seal_json_batch_fn seal_json_batch;
    utf8_of_fn utf8_of; /* PyUnicode_AsUTF8AndSize, for stringify(), stringify_into() and open_post() */
    PyObject *header_names[3]; /* "timestamp", "Authorization", "authorization": what open_post() reads, made once */
    PyObject *get; /* "get": a mapping's method open_post() calls when the headers are not a dict */
    PyObject *workspace; /* pasarela._binding's threading.local of workspaces, given to connect(): seal_payload()
                          * and open_post() read the thread's workspace address from it (.buffers.ws_address) */
    PyObject *buffers_name, *ws_address_name; /* "buffers", "ws_address", made once */
    parse_keys keys; /* the keys parse() and open_post() made (parse.h) */
    size_t release_bytes; /* the GIL is released around C work on at least this many bytes (release_for) */
    long long released_ns; /* how long the GIL was released in all (released_ns(), for benchmarks/threads.py) */
    double open_gil_share; /* of a large open that makes a payload, the share that holds the GIL, as learned from
                            * the last calls (learn_open_share): its release depends on it (open_releases) */
    call_counts counts[2]; /* seal_payload's [0] (by method), open_post's and open_post_bytes's [1] finished calls, for
                            * pasarela._telemetry (counting.h) */
    int counting; /* set_counting(): counts kept (pasarela[otel] in use) */
    PyObject *methods[COUNT_LABELS]; /* COUNT_METHODS, interned: the labels of seals (method_label) */
} fastcall_state;

/* RELEASE_BYTES: the default of release_bytes. Releasing the GIL around a C call lets another thread run Python
 * meanwhile, but taking it back costs a hand-off: the returning thread waits until the other lets go, which a thread
 * running Python does only at its own next release or at the switch interval. For short calls that costs more than
 * the parallel work gains (two threads releasing around every 1 KiB call made fewer requests per second than one);
 * from about 16 KiB of C work the gain wins. So below it the calls keep the GIL and two threads take turns
 * (benchmarks/threads.py --release-bytes measures where the line falls: docs/performance.md, "Threads").
 * set_gil_release_bytes() changes it (the benchmarks). */
#define RELEASE_BYTES 16384

/* A release of the GIL around C work: the thread state to restore (NULL: the GIL was kept) and the clock when the
 * GIL was let go. */
typedef struct {
    PyThreadState *saved;
    long long since;
} gil_release;

/* The GIL released when release is set (then another thread may run meanwhile), kept otherwise; reacquire() ends
 * it. */
static gil_release release_if(int release) {
    gil_release r = {NULL, 0};
    if (release) {
        r.since = monotonic_ns();
        r.saved = PyEval_SaveThread();
    }
    return r;
}

/* release_if for C work on about len bytes: released when len is at least state->release_bytes. */
static gil_release release_for(const fastcall_state *state, size_t len) {
    return release_if(len >= state->release_bytes);
}

/* OPEN_KEEP_SHARE: an open of release_bytes or more keeps the GIL when the share of it that holds the GIL (making
 * the payload's objects, against its C work: open_gil_share) is at least this. Then the part under the GIL is as long
 * as the C work that could run beside it, and releasing loses more to the hand-offs (each waits for a sleeping thread
 * to wake, and the objects are made in memory the other core last touched) than the overlap gains: an items-heavy
 * payload, whose objects dominate, opens faster with the GIL kept, a string-heavy one released
 * (docs/performance.md, "Threads"). */
#define OPEN_KEEP_SHARE 0.5
/* Each large open's share moves open_gil_share by 1 / OPEN_SHARE_WEIGHT of the difference: a few calls of one shape
 * settle it, one call preempted midway does not flip it. */
#define OPEN_SHARE_WEIGHT 4

/* Whether an open that makes a payload releases the GIL around its C work on about len bytes: from release_bytes
 * on, unless the payloads of the last large opens took as long as their C work or longer (OPEN_KEEP_SHARE). */
static int open_releases(const fastcall_state *state, size_t len) {
    return len >= state->release_bytes && state->open_gil_share < OPEN_KEEP_SHARE;
}

/* Takes the GIL back after release_if; the time it was let go (the C work, not the wait to take it back) added to
 * state->released_ns, under the GIL. */
static void reacquire(fastcall_state *state, gil_release r) {
    if (r.saved == NULL)
        return;
    long long released = monotonic_ns() - r.since;
    PyEval_RestoreThread(r.saved);
    state->released_ns += released;
}

static fastcall_state *state_of(PyObject *module) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    if (state != NULL &&
        (state->seal_json == NULL || state->open_request == NULL || state->open_request_as_sent == NULL ||
         state->canonicalize == NULL || state->seal_batch == NULL || state->seal_json_batch == NULL ||
         state->utf8_of == NULL ||
         state->workspace == NULL)) {
        PyErr_SetString(PyExc_RuntimeError, "pasarela._fastcall is not connected to the C core (connect())");
        return NULL;
    }
    return state;
}

/* A non-null address given as a Python int; NULL with an exception set otherwise. */
static void *address_of(PyObject *value, const char *function, const char *what) {
    void *pointer = PyLong_Check(value) ? PyLong_AsVoidPtr(value) : NULL;
    if (pointer == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_TypeError, "%s: %s: expected a non-zero address (int)", function, what);
    return pointer;
}

/* The bytes of a bytes object; NULL with an exception set otherwise. */
static const char *bytes_of(PyObject *value, Py_ssize_t *len, const char *what) {
    char *data;
    if (!PyBytes_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s: expected bytes", what);
        return NULL;
    }
    return PyBytes_AsStringAndSize(value, &data, len) < 0 ? NULL : data;
}

static int check_arity(Py_ssize_t nargs, Py_ssize_t n, const char *name) {
    if (nargs == n)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, n);
    return -1;
}

/* What seal_json, seal_payload and open_post act on: the module's state, the credentials and the workspace. */
typedef struct {
    fastcall_state *state;
    pasarela_credentials *credentials;
    pasarela_workspace *ws;
} call_target;

/* The state and credentials (args[0]) of a call with n arguments; the workspace is left for the caller to find.
 * The credentials are given as pasarela._binding's Credentials object, an immutable tuple whose item 0 is the
 * address of its pasarela_credentials, never as a bare address: the caller's arguments then hold a reference to the
 * object that owns that memory for as long as the call runs, the GIL released included (given the address alone,
 * another thread could drop the last reference meanwhile, as calling Terminal.__init__ again did: a use after
 * free). 0, or -1 with an exception set. */
static int begin_call_with_credentials(PyObject *module, call_args args, Py_ssize_t nargs, Py_ssize_t n,
                                       const char *name, call_target *target) {
    target->state = state_of(module);
    if (target->state == NULL || check_arity(nargs, n, name) < 0)
        return -1;
    PyObject *credentials = args[0];
    if (!PyTuple_Check(credentials) || PyTuple_Size(credentials) < 1) {
        PyErr_Format(PyExc_TypeError, "%s: credentials must be a pasarela._binding.Credentials", name);
        return -1;
    }
    target->credentials = address_of(PyTuple_GetItem(credentials, 0), name, "credentials");
    return target->credentials == NULL ? -1 : 0;
}

/* The call_target of a call with n arguments, the workspace's address args[1]. 0, or -1 with an exception set. */
static int begin_call(PyObject *module, call_args args, Py_ssize_t nargs, Py_ssize_t n, const char *name,
                      call_target *target) {
    if (begin_call_with_credentials(module, args, nargs, n, name, target) < 0)
        return -1;
    target->ws = address_of(args[1], name, "ws");
    return target->ws == NULL ? -1 : 0;
}

/* The layout this module was compiled against must be the cffi module's (both come from pasarela.h, but a
 * stale build of one of them would read the wrong fields): connect() checks it. */
static const Py_ssize_t layout[] = {
    (Py_ssize_t)sizeof(pasarela_workspace),           (Py_ssize_t)offsetof(pasarela_workspace, plaintext),
    (Py_ssize_t)offsetof(pasarela_workspace, out),     (Py_ssize_t)offsetof(pasarela_workspace, plaintext_len),
    (Py_ssize_t)offsetof(pasarela_workspace, out_len), (Py_ssize_t)offsetof(pasarela_workspace, json_facts),
};

/* connect(seal_json_address, open_request_address, layout, utf8_address, seal_batch_address,
 * open_request_as_sent_address, canonicalize_address, workspace, seal_json_batch_address): layout is the cffi
 * module's (sizeof
 * pasarela_workspace, then the offsets of plaintext, out, plaintext_len, out_len, json_facts); utf8_address is
 * PyUnicode_AsUTF8AndSize's (see stringify.h); workspace, the object whose buffers.ws_address is the address of the
 * calling thread's workspace (pasarela._binding's threading.local), which seal_payload() and open_post() read. */
static PyObject *fastcall_connect(PyObject *module, call_args args, Py_ssize_t nargs) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    if (state == NULL || check_arity(nargs, 9, "connect") < 0)
        return NULL;
    PyObject *given = args[2];
    Py_ssize_t n = (Py_ssize_t)(sizeof layout / sizeof layout[0]);
    if (!PyTuple_Check(given) || PyTuple_Size(given) != n) {
        PyErr_Format(PyExc_TypeError, "connect: layout must be a tuple of %zd ints", n);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t value = PyLong_AsSsize_t(PyTuple_GetItem(given, i));
        if (value == -1 && PyErr_Occurred())
            return NULL;
        if (value != layout[i]) {
            PyErr_Format(PyExc_ImportError,
                         "pasarela._fastcall was built against another pasarela_workspace layout than "
                         "pasarela._native (field %zd: %zd, not %zd): rebuild the package",
                         i, layout[i], value);
            return NULL;
        }
    }
    void *seal_json = address_of(args[0], "connect", "seal_json");
    void *open_request = seal_json == NULL ? NULL : address_of(args[1], "connect", "open_request");
    void *utf8_of = open_request == NULL ? NULL : address_of(args[3], "connect", "utf8");
    void *seal_batch = utf8_of == NULL ? NULL : address_of(args[4], "connect", "seal_batch");
    void *as_sent = seal_batch == NULL ? NULL
                                       : address_of(args[5], "connect", "open_request_as_sent");
    void *canonicalize = as_sent == NULL ? NULL : address_of(args[6], "connect", "canonicalize");
    void *seal_json_batch = canonicalize == NULL ? NULL
                                                 : address_of(args[8], "connect", "seal_json_batch");
    if (seal_json_batch == NULL)
        return NULL;
    /* function pointers pass through void * (POSIX and Windows guarantee the round trip) */
    state->seal_json = (seal_json_fn)(uintptr_t)seal_json;
    state->open_request = (open_request_fn)(uintptr_t)open_request;
    state->open_request_as_sent = (open_request_fn)(uintptr_t)as_sent;
    state->canonicalize = (canonicalize_fn)(uintptr_t)canonicalize;
    state->utf8_of = (utf8_of_fn)(uintptr_t)utf8_of;
    state->seal_batch = (seal_batch_fn)(uintptr_t)seal_batch;
    state->seal_json_batch = (seal_json_batch_fn)(uintptr_t)seal_json_batch;
    PyObject *workspace = args[7], *previous = state->workspace;
    Py_INCREF(workspace);
    state->workspace = workspace;
    Py_XDECREF(previous);
    Py_RETURN_NONE;
}

/* A tuple of n new references, each possibly NULL (then NULL, the others released). */
static PyObject *tuple_of(Py_ssize_t n, PyObject *const *items) {
    int complete = 1;
    for (Py_ssize_t i = 0; i < n; i++)
        complete &= items[i] != NULL;
    PyObject *tuple = complete ? PyTuple_New(n) : NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (tuple == NULL)
            Py_XDECREF(items[i]);
        else
            PyTuple_SetItem(tuple, i, items[i]); /* steals; cannot fail on a new tuple */
    }
    return tuple;
}

static PyObject *bytes_at(const void *data, size_t len) {
    if (len > (size_t)PY_SSIZE_T_MAX) {
        PyErr_SetString(PyExc_OverflowError, "result too large");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)len);
}

/* A new instance of row_type (a class derived from tuple by a class statement: check_row_type) of n items, all
 * NULL until set: what tuple.__new__(row_type, values) makes before it sets the items, the class's tp_alloc. A
 * row is made that way (its items set with PyTuple_SetItem, which steals a reference and cannot fail on it: a
 * new instance of a class derived from tuple, which PyTuple_Check accepts, its reference count 1), without the
 * tuple of arguments that calling tuple's constructor takes. NULL with an exception set. */
static PyObject *new_row(PyObject *row_type, Py_ssize_t n) {
    /* a heap type's slot, read as connect() reads addresses */
    allocfunc alloc = (allocfunc)(uintptr_t)PyType_GetSlot((PyTypeObject *)row_type, Py_tp_alloc);
    PyObject *row = alloc != NULL ? alloc((PyTypeObject *)row_type, n) : NULL;
    if (row == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_SystemError, "pasarela._fastcall: row_type has no tp_alloc");
    return row;
}

/* The row_type instance of (*head, *tail) (new_row), tail being n new references, each possibly NULL (then NULL,
 * all of them released). */
static PyObject *row_of(PyObject *row_type, PyObject *head, Py_ssize_t n, PyObject *const *tail) {
    int complete = 1;
    for (Py_ssize_t i = 0; i < n; i++)
        complete &= tail[i] != NULL;
    Py_ssize_t n_head = PyTuple_Size(head);
    PyObject *row = complete && n_head >= 0 ? new_row(row_type, n_head + n) : NULL;
    if (row == NULL) {
        for (Py_ssize_t i = 0; i < n; i++)
            Py_XDECREF(tail[i]);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n_head; i++) {
        PyObject *value = PyTuple_GetItem(head, i);
        Py_INCREF(value);
        PyTuple_SetItem(row, i, value);
    }
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SetItem(row, n_head + i, tail[i]);
    return row;
}

/* 0 when row_type is a class derived from tuple by a class statement (a heap type: not tuple itself, nor a static
 * type, whose slots the limited API of 3.9 cannot read); -1 with a TypeError otherwise. */
static int check_row_type(PyObject *row_type, const char *name) {
    if (PyType_Check(row_type) && (PyType_GetFlags((PyTypeObject *)row_type) & Py_TPFLAGS_HEAPTYPE) &&
        PyType_IsSubtype((PyTypeObject *)row_type, &PyTuple_Type))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: row_type must be a subclass of tuple made by a class statement", name);
    return -1;
}

/* What seal_json and seal_payload are given besides the text: the timestamp, the IV (NULL: the next of ws's pool),
 * and what each row is made of. */
typedef struct {
    uint64_t timestamp;
    const char *iv;
    PyObject *row_type, *head;
} seal_arguments;

/* Reads iv, row_type and head (args[iv_at], and the two after it). 0, or -1 with an exception set. */
static int read_row_arguments(call_args args, Py_ssize_t iv_at, const char *name, const char *iv_what,
                              seal_arguments *out) {
    PyObject *iv_object = args[iv_at];
    out->iv = NULL;
    if (iv_object != Py_None) {
        Py_ssize_t iv_len;
        if ((out->iv = bytes_of(iv_object, &iv_len, iv_what)) == NULL)
            return -1;
        if (iv_len != PASARELA_IV_LEN) {
            PyErr_Format(PyExc_ValueError, "%s: iv must be 16 bytes", name);
            return -1;
        }
    }
    out->row_type = args[iv_at + 1];
    out->head = args[iv_at + 2];
    if (check_row_type(out->row_type, name) < 0)
        return -1;
    if (!PyTuple_Check(out->head)) {
        PyErr_Format(PyExc_TypeError, "%s: head must be a tuple", name);
        return -1;
    }
    return 0;
}

/* The value of a timestamp given as an int, in *value. 0, or -1 with an exception set. */
static int read_timestamp(PyObject *given, uint64_t *value) {
    unsigned long long timestamp = PyLong_AsUnsignedLongLong(given);
    if (timestamp == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *value = (uint64_t)timestamp;
    return 0;
}

/* Reads the timestamp (args[2]), then what read_row_arguments reads. 0, or -1 with an exception set. */
static int read_seal_arguments(call_args args, Py_ssize_t iv_at, const char *name, const char *iv_what,
                               seal_arguments *out) {
    if (read_timestamp(args[2], &out->timestamp) < 0)
        return -1;
    return read_row_arguments(args, iv_at, name, iv_what, out);
}

/* pasarela_seal_json of json[0, json_len), the GIL released when the text is long enough (release_for; json must stay valid and unchanged: immutable
 * bytes, or memory of the caller's own); the status, then the request in ws. */
static int seal_released(call_target *target, const seal_arguments *a, const char *json, size_t json_len,
                         unsigned flags) {
    seal_json_fn seal_json = target->state->seal_json;
    gil_release released = release_for(target->state, json_len);
    int status = seal_json(target->credentials, target->ws, a->timestamp, (const uint8_t *)json, json_len, flags,
                           (const uint8_t *)a->iv);
    reacquire(target->state, released);
    return status;
}

/* The row of the request in ws: row_type's instance of (*head, request, plaintext_len, 0), or of (*head, timestamp,
 * request, plaintext_len, 0) when timestamp is not NULL (a new reference, which this takes). What it reads of ws it
 * reads before the row's tuples are made: their allocation may start a collection of the cyclic GC, whose
 * finalizers may seal or open on this thread, in this workspace (the request's bytes and the ints are not
 * objects the GC counts). */
static PyObject *sealed_row(call_target *target, const seal_arguments *a, PyObject *timestamp) {
    PyObject *tail[4]; /* assigned one by one: MSVC's /W4 warns of a non-constant aggregate initializer */
    Py_ssize_t n = 0;
    if (timestamp != NULL)
        tail[n++] = timestamp;
    tail[n++] = bytes_at(target->ws->out, target->ws->out_len);
    tail[n++] = PyLong_FromSize_t(target->ws->plaintext_len);
    tail[n++] = PyLong_FromLong(0);
    return row_of(a->row_type, a->head, n, tail);
}

/* seal_json(credentials, ws, timestamp, json, flags, iv, row_type, head, check_facts) -> row | (row, facts) |
 * status. credentials: a Credentials (begin_call_with_credentials); ws: a pasarela_workspace's address; json:
 * bytes; iv: 16 bytes, or None for the next IV of ws's pool. As pasarela_seal_json, the GIL released during it. On PASARELA_OK,
 * the row is row_type's instance of (*head, request, plaintext_len, 0), made as tuple.__new__ makes it (row_of);
 * returned alone unless the text has a fact of check_facts (then with the facts); any other status is returned (an
 * int). */
static PyObject *fastcall_seal_json(PyObject *module, call_args args, Py_ssize_t nargs) {
    call_target target;
    seal_arguments a;
    if (begin_call(module, args, nargs, 9, "seal_json", &target) < 0 ||
        read_seal_arguments(args, 5, "seal_json", "seal_json: iv", &a) < 0)
        return NULL;
    Py_ssize_t json_len;
    const char *json = bytes_of(args[3], &json_len, "seal_json: json");
    if (json == NULL)
        return NULL;
    unsigned long flags = PyLong_AsUnsignedLong(args[4]);
    if (flags == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    unsigned long check_facts = PyLong_AsUnsignedLong(args[8]);
    if (check_facts == (unsigned long)-1 && PyErr_Occurred())
        return NULL;
    int status = seal_released(&target, &a, json, (size_t)json_len, (unsigned)flags);
    if (status != PASARELA_OK)
        return PyLong_FromLong(status);
    unsigned facts = target.ws->json_facts; /* read first: making the row may run a finalizer (sealed_row) */
    PyObject *row = sealed_row(&target, &a, NULL);
    if (row == NULL || !(facts & check_facts))
        return row;
    PyObject *result[2];
    result[0] = row;
    result[1] = PyLong_FromUnsignedLong(facts);
    return tuple_of(2, result);
}

/* The timestamp of a seal as a new reference to an int, its value in *value: the int given, or when it is None the
 * C library's time() (whole UTC seconds: what int(time.time()) gives, read without a Python call; glibc reads its
 * coarse clock, up to a tick (4-10 ms) behind, so in a second's first tick it may still give the second before). NULL
 * with an exception set otherwise. */
static PyObject *timestamp_of(PyObject *given, const char *name, uint64_t *value) {
    if (given == Py_None) {
        time_t now = time(NULL);
        if (now <= 0) {
            PyErr_Format(PyExc_OSError, "%s: the system clock could not be read", name);
            return NULL;
        }
        *value = (uint64_t)now;
        return PyLong_FromUnsignedLongLong((unsigned long long)now);
    }
    if (read_timestamp(given, value) < 0)
        return NULL;
    Py_INCREF(given);
    return given;
}

/* The calling thread's workspace, through the object connect() was given (a threading.local: the first reading on
 * a thread makes that thread's workspace, in Python). Its buffers object, a new reference that keeps the workspace's
 * memory alive while the caller works in it, and the workspace in *ws; NULL with an exception set otherwise. */
static PyObject *thread_buffers(fastcall_state *state, const char *name, pasarela_workspace **ws) {
    PyObject *buffers = PyObject_GetAttr(state->workspace, state->buffers_name);
    PyObject *address = buffers == NULL ? NULL : PyObject_GetAttr(buffers, state->ws_address_name);
    *ws = address == NULL ? NULL : (pasarela_workspace *)address_of(address, name, "workspace");
    Py_XDECREF(address);
    if (*ws == NULL)
        Py_CLEAR(buffers);
    return buffers;
}

/* seal_payload(credentials, timestamp, payload, iv, row_type, head) -> row | None | status: seal_json of
 * stringify(payload)'s text (PASARELA_JSON_STRINGIFIED) in one call, in the calling thread's workspace
 * (thread_buffers), at timestamp, or now when it is None (timestamp_of), the text made in this call's own buffer
 * and never a bytes object (a bytes object handed from one call to the next, with the Python between them, was a
 * large share of a small seal). On PASARELA_OK the row is row_type's instance of (*head, timestamp, request, plaintext_len, 0). None when
 * the writer declines payload; any status but PASARELA_OK is returned (an int: the caller then takes the two calls,
 * which see to an empty IV pool or a workspace too small). Terminal.seal calls it directly: reading the clock and
 * finding the thread's workspace here spares a Python function around the call, a measurable share of a small
 * seal. */
static PyObject *fastcall_seal_payload(PyObject *module, call_args args, Py_ssize_t nargs) {
    call_target target;
    seal_arguments a;
    if (begin_call_with_credentials(module, args, nargs, 6, "seal_payload", &target) < 0 ||
        read_row_arguments(args, 3, "seal_payload", "seal_payload: iv", &a) < 0)
        return NULL;
    long long start = counting_start(target.state->counting, &target.state->counts[0]);
    PyObject *timestamp = timestamp_of(args[1], "seal_payload", &a.timestamp);
    if (timestamp == NULL)
        return NULL;
    PyObject *buffers = thread_buffers(target.state, "seal_payload", &target.ws);
    if (buffers == NULL) {
        Py_DECREF(timestamp);
        return NULL;
    }
    char first[2048]; /* most payloads fit: no heap block for them */
    stringify_writer writer;
    pasarela_stringify_start(&writer, target.state->utf8_of, first, sizeof first, 1);
    int rc = pasarela_stringify_dict(&writer, args[2]);
    int status = rc != STRINGIFY_DONE ? PASARELA_OK
                                      : seal_released(&target, &a, writer.w.out, writer.w.len, PASARELA_JSON_STRINGIFIED);
    PyMem_Free(writer.w.heap);
    PyObject *result;
    if (rc == STRINGIFY_ERROR) {
        result = NULL;
    } else if (rc != STRINGIFY_DONE) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (status == PASARELA_OK) {
        result = sealed_row(&target, &a, timestamp);
        timestamp = NULL; /* taken */
        if (result != NULL && target.state->counting)
            counting_end(1, &target.state->counts[0], start, method_label(target.state->methods, args[5]));
    } else {
        result = PyLong_FromLong(status);
    }
    Py_XDECREF(timestamp);
    Py_DECREF(buffers);
    return result;
}

/* (plaintext, facts), the plaintext copied from text[0, len). */
static PyObject *plaintext_and_facts(const char *text, size_t len, unsigned facts) {
    PyObject *result[2];
    result[0] = bytes_at(text, len);
    result[1] = PyLong_FromUnsignedLong(facts);
    return tuple_of(2, result);
}

/* headers.get(name) as a new reference (None when absent): a dict read directly, another mapping through its get
 * method (which may run Python code: nothing of the workspace is in use yet). NULL with an exception set. */
static PyObject *header(PyObject *headers, PyObject *get, PyObject *name) {
    if (PyDict_CheckExact(headers)) {
        PyObject *value = PyDict_GetItemWithError(headers, name);
        if (value == NULL && PyErr_Occurred())
            return NULL;
        value = value == NULL ? Py_None : value;
        Py_INCREF(value);
        return value;
    }
    return PyObject_CallMethodObjArgs(headers, get, name, NULL);
}

/* The UTF-8 of value when it is an exact str that has some (no lone surrogates) and, if ascii, is ASCII; NULL
 * otherwise, with no exception set. */
static const char *header_text(fastcall_state *state, PyObject *value, int ascii, Py_ssize_t *len) {
    const char *text = PyUnicode_CheckExact(value) ? state->utf8_of(value, len) : NULL;
    if (text == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (ascii) { /* 8 bytes at a time: a header's every byte is tested, on every request */
        uint64_t high = 0, word;
        Py_ssize_t i = 0;
        for (; i + 8 <= *len; i += 8) {
            memcpy(&word, text + i, 8);
            high |= word;
        }
        for (; i < *len; i++)
            high |= (unsigned char)text[i];
        if (high & UINT64_C(0x8080808080808080))
            return NULL;
    }
    return text;
}

/* The C core's open_request (or its as_sent form), the GIL released when release is set; its duration added to
 * *c_ns unless c_ns is NULL (timed without the wait for the GIL after it: learn_open_share). */
static int open_released(open_request_fn open_request, const call_target *target, int release, long long *c_ns,
                         const char *timestamp, Py_ssize_t timestamp_len, double now, double tolerance,
                         const char *authorization, Py_ssize_t authorization_len, const char *body,
                         Py_ssize_t body_len) {
    gil_release released = release_if(release);
    long long start = c_ns != NULL ? monotonic_ns() : 0;
    int status = open_request(target->credentials, target->ws, timestamp, (size_t)timestamp_len, now, tolerance,
                              authorization, (size_t)authorization_len, body, (size_t)body_len);
    if (c_ns != NULL)
        *c_ns += monotonic_ns() - start;
    reacquire(target->state, released);
    return status;
}

/* A large open's share under the GIL, its payload's making (parse_ns) over that and its C work (c_ns), taken into
 * open_gil_share (OPEN_SHARE_WEIGHT). Under the GIL. */
static void learn_open_share(fastcall_state *state, long long c_ns, long long parse_ns) {
    if (c_ns < 0 || parse_ns < 0 || c_ns + parse_ns <= 0)
        return; /* (a clock that went back) */
    double share = (double)parse_ns / (double)(c_ns + parse_ns);
    state->open_gil_share += (share - state->open_gil_share) / OPEN_SHARE_WEIGHT;
}

/* Whether the C core's canonicalizer (the GIL released when the text is long enough: release_for) finds text[0, len) to be its own canonical form,
 * without a top-level "key" or "__proto__" and without the long integers the caller reads itself: then, signed as
 * sent, the text is what pasarela_open_request would have accepted, with the payload read from it. The
 * workspace's plaintext and scratch serve as its buffers (as large as pasarela_open_request_as_sent required for
 * this text; their contents are no longer in use). */
static int canonical_as_sent(fastcall_state *state, pasarela_workspace *ws, const char *text, size_t len) {
    size_t canonical_len = 0, error_offset = 0;
    unsigned facts = 0;
    gil_release released = release_for(state, len);
    int rc = state->canonicalize((const uint8_t *)text, len, 0, ws->plaintext, ws->plaintext_cap, &canonical_len,
                                 ws->scratch, ws->scratch_cap, &error_offset, &facts);
    reacquire(state, released);
    return rc == PASARELA_OK && canonical_len == len && memcmp(ws->plaintext, text, len) == 0 &&
           !(facts & (PASARELA_JSON_FACT_KEY | PASARELA_JSON_FACT_PROTO | PASARELA_JSON_FACT_LONG_INT));
}

/* The payload of the opened text[0, len), read from a copy of it: its dicts and lists count towards the cyclic
 * GC, whose collections may run finalizers, and one that opens a request on this thread reuses the workspace the
 * text is in. as_sent (a text signed as sent, PASARELA_SIGNED_AS_SENT): the payload when the text is genuine,
 * confirmed canonical by the reader (pasarela_parse_canonical_json) or else by canonical_as_sent; NULL with no
 * exception otherwise, for the caller to ask pasarela_open_request. Otherwise (a verified plaintext) read by
 * pasarela_parse_json, and where it declines the caller reads the text: (plaintext, facts). */
static PyObject *payload_of(fastcall_state *state, pasarela_workspace *ws, const char *text, size_t len,
                            int as_sent, unsigned facts) {
    char local[4096], *copy = len <= sizeof local ? local : (char *)PyMem_Malloc(len);
    if (copy == NULL)
        return PyErr_NoMemory();
    memcpy(copy, text, len);
    PyObject *payload;
    if (as_sent) {
        int confirmed = 0;
        payload = pasarela_parse_canonical_json(copy, len, &state->keys, &confirmed);
        if (payload != NULL && !confirmed &&
            !(PyDict_Check(payload) && canonical_as_sent(state, ws, copy, len)))
            Py_CLEAR(payload);
    } else {
        payload = pasarela_parse_json(copy, len, &state->keys);
        if (payload == NULL && !PyErr_Occurred())
            payload = plaintext_and_facts(copy, len, facts);
    }
    if (copy != local)
        PyMem_Free(copy);
    return payload;
}

/* open_post(credentials, headers, body, now, tolerance) -> payload | (plaintext, facts) | status | None: a POST
 * request in the form seal writes, its headers (a mapping of str) and body (bytes) read here, opened in the calling
 * thread's workspace (thread_buffers) with the GIL released by pasarela_open_request_as_sent, and when the text
 * signed as sent is not confirmed canonical by the reader that builds its payload (pasarela_parse_canonical_json),
 * by pasarela_open_request. The verified plaintext's payload is built from it (parse.c) unless it has an integer of
 * 17 digits or more or that reader declines it: then the plaintext and its facts are returned. A status (an int)
 * when it is not PASARELA_OK (PASARELA_E_BUFFER_TOO_SMALL: a workspace too small for the body, which the caller
 * grows); None when the headers are not in the form read here (no str "timestamp", or one with lone surrogates; no
 * str "Authorization" or "authorization", or one that is not ASCII): the caller then reads the request the slower
 * way, which names what is wrong. Terminal.open calls it directly. as_bytes: open_post_bytes (below). */
static PyObject *open_post(PyObject *module, call_args args, Py_ssize_t nargs, int as_bytes) {
    static const char *const names[2] = {"open_post", "open_post_bytes"};
    call_target target;
    if (begin_call_with_credentials(module, args, nargs, 5, names[as_bytes], &target) < 0)
        return NULL;
    fastcall_state *state = target.state;
    long long start = counting_start(state->counting, &state->counts[1]);
    PyObject *headers = args[1];
    Py_ssize_t body_len;
    const char *body = bytes_of(args[2], &body_len, "open_post: body");
    if (body == NULL)
        return NULL;
    double now = PyFloat_AsDouble(args[3]);
    if (now == -1.0 && PyErr_Occurred())
        return NULL;
    double tolerance = PyFloat_AsDouble(args[4]);
    if (tolerance == -1.0 && PyErr_Occurred())
        return NULL;
    PyObject *timestamp_value = header(headers, state->get, state->header_names[0]);
    if (timestamp_value == NULL)
        return NULL;
    PyObject *authorization_value = header(headers, state->get, state->header_names[1]);
    if (authorization_value == Py_None) { /* as header() reads it: then in lower case, as ASGI servers spell it */
        Py_DECREF(authorization_value);
        authorization_value = header(headers, state->get, state->header_names[2]);
    }
    if (authorization_value == NULL) {
        Py_DECREF(timestamp_value);
        return NULL;
    }
    /* the two str objects are kept alive until the C core is done with their UTF-8 */
    Py_ssize_t timestamp_len, authorization_len;
    const char *timestamp = header_text(state, timestamp_value, 0, &timestamp_len);
    const char *authorization = timestamp == NULL ? NULL
                                                  : header_text(state, authorization_value, 1, &authorization_len);
    /* the workspace found after the headers are read (a mapping's get may run Python code, which may seal on this
     * thread and grow its workspace) */
    PyObject *buffers = authorization == NULL ? NULL : thread_buffers(state, names[as_bytes], &target.ws);
    int status = PASARELA_OK;
    PyObject *payload = NULL;
    /* the GIL released around C work on release_bytes of plaintext (about half the body's hex) or more, unless the
     * payloads of such opens hold it longer than their C work (open_releases); those opens timed (learn_open_share) */
    size_t plaintext_len = (size_t)body_len / 2;
    int release = as_bytes ? plaintext_len >= state->release_bytes : open_releases(state, plaintext_len);
    long long c_ns = 0, parse_ns = 0, parse_start = 0;
    long long *timed = !as_bytes && plaintext_len >= state->release_bytes ? &c_ns : NULL;
    if (buffers != NULL) {
        /* first the signature of the text as sent: what a JavaScript client sends is already canonical, and the
         * reader confirms that as it builds the payload, so the C core need not canonicalize it (for what the reader
         * cannot confirm, the canonicalizer alone: no second decryption or signature) */
        status = open_released(as_bytes ? state->open_request : state->open_request_as_sent, &target, release, timed,
                               timestamp, timestamp_len, now, tolerance, authorization, authorization_len, body,
                               body_len);
        if (status == PASARELA_SIGNED_AS_SENT) {
            parse_start = timed != NULL ? monotonic_ns() : 0;
            payload = payload_of(state, target.ws, target.ws->out, target.ws->out_len, 1, 0);
            parse_ns = timed != NULL ? monotonic_ns() - parse_start : 0;
            if (payload == NULL && !PyErr_Occurred()) /* not confirmed: the server's own verdict, as before */
                status = open_released(state->open_request, &target, release, timed, timestamp, timestamp_len, now,
                                       tolerance, authorization, authorization_len, body, body_len);
        }
    }
    Py_DECREF(timestamp_value);
    Py_DECREF(authorization_value);
    PyObject *result;
    if (authorization == NULL) {
        Py_INCREF(Py_None);
        result = Py_None;
    } else if (payload != NULL || PyErr_Occurred()) { /* (thread_buffers failed: its exception) */
        result = payload;
    } else if (status != PASARELA_OK) {
        result = PyLong_FromLong(status);
    } else if (as_bytes) { /* a bytes object: not one the cyclic GC tracks, so no finalizer runs meanwhile */
        result = bytes_at(target.ws->plaintext, target.ws->plaintext_len);
    } else if (target.ws->json_facts & PASARELA_JSON_FACT_LONG_INT) { /* such integers JSON.parse rounds: the caller
                                                                         * reads the text */
        result = plaintext_and_facts((const char *)target.ws->plaintext, target.ws->plaintext_len,
                                     target.ws->json_facts);
    } else {
        parse_start = timed != NULL ? monotonic_ns() : 0;
        result = payload_of(state, target.ws, (const char *)target.ws->plaintext, target.ws->plaintext_len, 0,
                            target.ws->json_facts);
        parse_ns += timed != NULL ? monotonic_ns() - parse_start : 0;
    }
    if (timed != NULL && result != NULL && PyDict_Check(result)) /* a payload made */
        learn_open_share(state, c_ns, parse_ns);
    Py_XDECREF(buffers);
    if (result != NULL && result != Py_None && !PyLong_Check(result)) /* a payload, its text, or the bytes */
        counting_end(state->counting, &state->counts[1], start, 0);
    return result;
}

static PyObject *fastcall_open_post(PyObject *module, call_args args, Py_ssize_t nargs) {
    return open_post(module, args, nargs, 0);
}

/* open_post_bytes(credentials, headers, body, now, tolerance) -> plaintext | status | None: open_post's checks and
 * refusals, returning the verified canonical text itself (what JSON.stringify writes, without the signature's "key"
 * member) instead of its payload: for a gateway that forwards the bytes. One pasarela_open_request, which
 * canonicalizes the text and signs that (the text as sent would need the canonicalizer after it anyway, to confirm
 * it: no work saved); no Python object but the bytes. */
static PyObject *fastcall_open_post_bytes(PyObject *module, call_args args, Py_ssize_t nargs) {
    return open_post(module, args, nargs, 1);
}

/* What the rows of a batch are made of (rows(), seal_rows(), whose first four arguments are row_type, column,
 * column_start and common): row i is row_type's instance of (column[column_start + i], *common, buffer,
 * plaintext_len, start) (new_row), its items copied from one tuple of values reused from row to row, held by the
 * row_maker alone: only the values that change are replaced. */
typedef struct {
    PyObject *row_type, *column, *values;
    Py_ssize_t column_start, n_common;
} row_maker;

/* Reads row_type, column, column_start and common (args[0] to args[3]) and makes the values. 0, or -1 with an
 * exception set (then nothing to release). */
static int row_maker_start(row_maker *m, call_args args, const char *name) {
    m->row_type = args[0];
    m->column = args[1];
    PyObject *common = args[3];
    if (check_row_type(m->row_type, name) < 0)
        return -1;
    if (!PyList_Check(m->column) || !PyTuple_Check(common)) {
        PyErr_Format(PyExc_TypeError, "%s: column must be a list and common a tuple", name);
        return -1;
    }
    m->column_start = PyLong_AsSsize_t(args[2]);
    if (m->column_start == -1 && PyErr_Occurred())
        return -1;
    m->n_common = PyTuple_Size(common);
    Py_ssize_t n_values = m->n_common + 4;
    if ((m->values = PyTuple_New(n_values)) == NULL)
        return -1;
    /* PyTuple_SetItem steals a reference (also when it fails: when someone else holds the tuple) */
    for (Py_ssize_t k = 0; k < n_values; k++) {
        PyObject *value = k >= 1 && k <= m->n_common ? PyTuple_GetItem(common, k - 1) : Py_None;
        Py_INCREF(value);
        PyTuple_SetItem(m->values, k, value); /* cannot fail: values is new */
    }
    return 0;
}

/* -1 with a ValueError unless column holds n items from column_start (both not negative). */
static int row_maker_check(const row_maker *m, Py_ssize_t n, const char *name) {
    if (n >= 0 && m->column_start >= 0 && PyList_Size(m->column) - m->column_start >= n)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: n and column_start must not be negative, nor n exceed column's items from column_start", name);
    return -1;
}

/* The buffer of the rows made next (a new reference, stolen; NULL: an exception is set). 0, or -1. */
static int row_maker_buffer(row_maker *m, PyObject *buffer) {
    return buffer == NULL || PyTuple_SetItem(m->values, m->n_common + 1, buffer) < 0 ? -1 : 0;
}

/* Row i, of the current buffer: a new reference, or NULL with an exception set. */
static PyObject *row_maker_row(row_maker *m, Py_ssize_t i, size_t plaintext_len, size_t start) {
    /* read again for each row: a collection that runs a finalizer during an allocation could, in theory, have
     * shortened the list (then an IndexError, not a read past its end) */
    PyObject *item = PyList_GetItem(m->column, m->column_start + i);
    if (item == NULL)
        return NULL;
    if (PyTuple_GetItem(m->values, 0) != item) {
        Py_INCREF(item);
        if (PyTuple_SetItem(m->values, 0, item) < 0)
            return NULL;
    }
    PyObject *value = PyLong_FromSize_t(plaintext_len);
    if (value == NULL || PyTuple_SetItem(m->values, m->n_common + 2, value) < 0)
        return NULL;
    value = PyLong_FromSize_t(start);
    if (value == NULL || PyTuple_SetItem(m->values, m->n_common + 3, value) < 0)
        return NULL;
    Py_ssize_t n_values = m->n_common + 4;
    PyObject *row = new_row(m->row_type, n_values);
    for (Py_ssize_t k = 0; row != NULL && k < n_values; k++) {
        value = PyTuple_GetItem(m->values, k);
        Py_INCREF(value);
        PyTuple_SetItem(row, k, value); /* cannot fail (new_row) */
    }
    return row;
}

static void row_maker_end(row_maker *m) { Py_DECREF(m->values); }

/* rows(row_type, column, column_start, common, out, out_lens, plaintext_lens, n, buffer_bytes,
 * shared_request_bytes) -> list of n rows. A batch's n requests lie back to back at out, out_lens[i] bytes each
 * (plaintext_lens[i] of them the plaintext); row i is the row_type (a class derived in Python from tuple alone)
 * made of (column[column_start + i], *common, buffer, plaintext_lens[i], start), request i being
 * buffer[start:]. Requests of up to shared_request_bytes on average share bytes objects of up to about
 * buffer_bytes each (one copy for many; the first request of each always fits); larger ones get one each,
 * starting at 0. What _binding._rows_py does from _binding._requests_py's buffers and starts, in one call instead
 * of about a dozen Python operations per request: rows are made as tuple.__new__(row_type, values) makes them
 * (new_row), without running row_type's __new__. out, out_lens, plaintext_lens: addresses the caller keeps alive. */
static PyObject *fastcall_rows(PyObject *module, call_args args, Py_ssize_t nargs) {
    row_maker m;
    (void)module;
    if (check_arity(nargs, 10, "rows") < 0 || row_maker_start(&m, args, "rows") < 0)
        return NULL;
    PyObject *rows = NULL;
    const char *out = (const char *)address_of(args[4], "rows", "out");
    const size_t *out_lens = out == NULL ? NULL : (const size_t *)address_of(args[5], "rows",
                                                                              "out_lens");
    const size_t *plaintext_lens = out_lens == NULL ? NULL : (const size_t *)address_of(args[6],
                                                                                         "rows", "plaintext_lens");
    if (plaintext_lens == NULL)
        goto fail;
    Py_ssize_t n = PyLong_AsSsize_t(args[7]);
    size_t buffer_bytes = PyLong_AsSize_t(args[8]);
    size_t shared_request_bytes = PyLong_AsSize_t(args[9]);
    if (PyErr_Occurred() || row_maker_check(&m, n, "rows") < 0)
        goto fail;
    size_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (out_lens[i] > (size_t)PY_SSIZE_T_MAX - total) {
            PyErr_SetString(PyExc_OverflowError, "rows: the requests' total length is too large");
            goto fail;
        }
        total += out_lens[i];
    }
    /* total <= shared_request_bytes * n, without overflow (total + n cannot overflow: both fit in Py_ssize_t) */
    int shared = n > 0 && (total + (size_t)n - 1) / (size_t)n <= shared_request_bytes;
    if ((rows = PyList_New(n)) == NULL)
        goto fail;
    size_t base = 0; /* where the current buffer begins */
    for (Py_ssize_t first = 0; first < n;) {
        /* the requests of this buffer: first .. last - 1 (the first always; others while they end within
         * buffer_bytes of base) */
        Py_ssize_t last = first + 1;
        size_t end = base + out_lens[first];
        while (shared && last < n && end + out_lens[last] - base <= buffer_bytes)
            end += out_lens[last++];
        if (row_maker_buffer(&m, bytes_at(out + base, end - base)) < 0)
            goto fail;
        size_t start = 0;
        for (Py_ssize_t i = first; i < last; i++) {
            PyObject *row = row_maker_row(&m, i, plaintext_lens[i], start);
            if (row == NULL)
                goto fail;
            PyList_SetItem(rows, i, row); /* steals; cannot fail on a new list */
            start += out_lens[i];
        }
        first = last;
        base = end;
    }
    row_maker_end(&m);
    return rows;
fail:
    row_maker_end(&m);
    Py_XDECREF(rows); /* the rows not yet made are NULL, which a list's release skips */
    return NULL;
}

/* seal_rows(row_type, column, column_start, common, credentials, ws, timestamp, plaintexts, lens, n, statuses)
 * -> list of the rows of the items processed: pasarela_seal_batch of n canonical plaintexts (the writer's texts,
 * back to back at the address plaintexts, lens[i] bytes each; credentials: the address of n pointers to
 * pasarela_credentials), the GIL released, IVs from ws's pool, each request written straight into the bytes
 * object that holds it (no copy out of the workspace: for requests large enough to get a bytes object each).
 * Row i is as rows() makes it, with (that object, lens[i], 0); statuses[i] (an int each, at the address statuses)
 * says whether item i was sealed, and an item that was not gets b"" and 0. The list is shorter than n when the
 * pool ran out or the workspace's scratch is too small for the next item (empty: refill or grow, then call again
 * for the rest). */
static PyObject *fastcall_seal_rows(PyObject *module, call_args args, Py_ssize_t nargs) {
    static const char name[] = "seal_rows";
    fastcall_state *state = state_of(module);
    row_maker m;
    if (state == NULL || check_arity(nargs, 11, name) < 0 || row_maker_start(&m, args, name) < 0)
        return NULL;
    PyObject **requests = NULL, *rows = NULL;
    char **outs = NULL;
    Py_ssize_t n = 0, made = 0;
    const pasarela_credentials *const *credentials = address_of(args[4], name, "credentials");
    pasarela_workspace *ws = credentials == NULL ? NULL : address_of(args[5], name, "ws");
    unsigned long long timestamp = ws == NULL ? 0 : PyLong_AsUnsignedLongLong(args[6]);
    if (ws == NULL || (timestamp == (unsigned long long)-1 && PyErr_Occurred()))
        goto fail;
    const uint8_t *plaintexts = address_of(args[7], name, "plaintexts");
    const size_t *lens = plaintexts == NULL ? NULL : address_of(args[8], name, "lens");
    int *statuses = lens == NULL ? NULL : address_of(args[10], name, "statuses");
    if (statuses == NULL)
        goto fail;
    n = PyLong_AsSsize_t(args[9]);
    if ((n == -1 && PyErr_Occurred()) || row_maker_check(&m, n, name) < 0)
        goto fail;
    if ((size_t)n > PY_SSIZE_T_MAX / (sizeof *requests + sizeof *outs)) {
        PyErr_Format(PyExc_OverflowError, "%s: n is too large", name);
        goto fail;
    }
    requests = PyMem_Malloc((size_t)n * sizeof *requests + 1);
    outs = PyMem_Malloc((size_t)n * sizeof *outs + 1);
    if (requests == NULL || outs == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    /* the bytes objects the requests are written into: the GC does not track bytes, so making them runs no
     * finalizer; nothing else sees them until their rows are made */
    for (; made < n; made++) {
        if (lens[made] > PASARELA_MAX_JSON_LEN) { /* refused by the core (PASARELA_E_TOO_LARGE), which then reads
                                                   * no buffer; below it, the length is exact in size_t (pasarela.h) */
            requests[made] = NULL;
            outs[made] = NULL;
            continue;
        }
        requests[made] = bytes_at(NULL, PASARELA_REQUEST_LEN(lens[made]));
        if (requests[made] == NULL)
            goto fail;
        outs[made] = PyBytes_AsString(requests[made]);
    }
    size_t total = 0; /* the batch's bytes for release_for, counted up to release_bytes (so without overflow) */
    for (Py_ssize_t i = 0; i < n && total < state->release_bytes; i++)
        total += lens[i] < state->release_bytes - total ? lens[i] : state->release_bytes - total;
    seal_batch_fn seal_batch = state->seal_batch;
    gil_release released = release_for(state, total);
    size_t done = seal_batch(credentials, (uint64_t)timestamp, plaintexts, lens, (size_t)n, NULL, ws, outs, statuses);
    reacquire(state, released);
    if ((rows = PyList_New((Py_ssize_t)done)) == NULL)
        goto fail;
    for (size_t i = 0; i < done; i++) {
        int sealed = statuses[i] == PASARELA_OK;
        PyObject *request = sealed ? requests[i] : PyBytes_FromStringAndSize("", 0);
        if (sealed)
            requests[i] = NULL; /* the row holds it now */
        PyObject *row = row_maker_buffer(&m, request) < 0 ? NULL : row_maker_row(&m, (Py_ssize_t)i,
                                                                              sealed ? lens[i] : 0, 0);
        if (row == NULL)
            goto fail;
        PyList_SetItem(rows, (Py_ssize_t)i, row); /* steals; cannot fail on a new list */
    }
    goto done;
fail:
    Py_CLEAR(rows);
done:
    for (Py_ssize_t i = 0; i < made; i++)
        Py_XDECREF(requests[i]);
    PyMem_Free(requests);
    PyMem_Free(outs);
    row_maker_end(&m);
    return rows;
}

/* seal_json_batch(credentials, timestamp, json, json_offset, json_lens, start, n, json_flags, ws, statuses,
 * plaintext_lens, out_lens, facts, facts_mask) -> (done, first_exception): pasarela_seal_json_batch of the n texts of
 * items start .. start + n - 1, back to back from json + json_offset (json_lens[start + i] bytes each; credentials,
 * json_lens, statuses, plaintext_lens, out_lens, facts: addresses of the whole batch's arrays, which the caller keeps
 * alive, read and written from item start; ws a workspace's address), IVs from ws's pool; done as it returns it,
 * and the first of those done items (counted from start) not sealed or with a fact of facts_mask (done when none:
 * pasarela_batch_first_exception's answer, without a second call). What _binding calls through cffi otherwise, which
 * releases the GIL around every call: here only when the texts reach release_bytes (release_for), since two threads
 * sealing batches of small payloads, the GIL handed over at each call, made fewer requests per second than one. The
 * offsets are applied here, not in Python: once per request of a batch, where Python's cost per request counts. */
static PyObject *fastcall_seal_json_batch(PyObject *module, call_args args, Py_ssize_t nargs) {
    static const char name[] = "seal_json_batch";
    fastcall_state *state = state_of(module);
    if (state == NULL || check_arity(nargs, 14, name) < 0)
        return NULL;
    const pasarela_credentials *const *credentials = address_of(args[0], name, "credentials");
    const uint8_t *json = credentials == NULL ? NULL : address_of(args[2], name, "json");
    const size_t *json_lens = json == NULL ? NULL : address_of(args[4], name, "json_lens");
    pasarela_workspace *ws = json_lens == NULL ? NULL : address_of(args[8], name, "ws");
    int *statuses = ws == NULL ? NULL : address_of(args[9], name, "statuses");
    size_t *plaintext_lens = statuses == NULL ? NULL : address_of(args[10], name, "plaintext_lens");
    size_t *out_lens = plaintext_lens == NULL ? NULL : address_of(args[11], name, "out_lens");
    unsigned *facts = out_lens == NULL ? NULL : address_of(args[12], name, "facts");
    if (facts == NULL)
        return NULL;
    unsigned long long timestamp = PyLong_AsUnsignedLongLong(args[1]);
    size_t json_offset = PyLong_AsSize_t(args[3]);
    size_t start = PyLong_AsSize_t(args[5]);
    size_t n = PyLong_AsSize_t(args[6]);
    unsigned long json_flags = PyLong_AsUnsignedLong(args[7]);
    unsigned long facts_mask = PyLong_AsUnsignedLong(args[13]);
    if (PyErr_Occurred())
        return NULL;
    credentials += start;
    json_lens += start;
    statuses += start;
    plaintext_lens += start;
    out_lens += start;
    facts += start;
    size_t total = 0; /* the texts' bytes for release_for, counted up to release_bytes (so without overflow) */
    for (size_t i = 0; i < n && total < state->release_bytes; i++)
        total += json_lens[i] < state->release_bytes - total ? json_lens[i] : state->release_bytes - total;
    seal_json_batch_fn seal_json_batch = state->seal_json_batch;
    gil_release released = release_for(state, total);
    size_t done = seal_json_batch(credentials, (uint64_t)timestamp, json + json_offset, json_lens, n,
                                  (unsigned)json_flags, NULL, ws, statuses, plaintext_lens, out_lens, facts);
    reacquire(state, released);
    size_t first = 0;
    while (first < done && statuses[first] == PASARELA_OK && !(facts[first] & facts_mask))
        first++;
    PyObject *result[2];
    result[0] = PyLong_FromSize_t(done);
    result[1] = PyLong_FromSize_t(first);
    return tuple_of(2, result);
}

/* set_gil_release_bytes(n) -> the previous value: the GIL is released around C work on at least n bytes from now on
 * (RELEASE_BYTES by default; 0: around every call, as before; a huge n: never). For benchmarks/threads.py, which
 * finds where releasing pays and the share of a call that holds the GIL. */
static PyObject *fastcall_set_gil_release_bytes(PyObject *module, PyObject *value) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    if (state == NULL)
        return NULL;
    size_t n = PyLong_AsSize_t(value);
    if (n == (size_t)-1 && PyErr_Occurred())
        return NULL;
    size_t previous = state->release_bytes;
    state->release_bytes = n;
    return PyLong_FromSize_t(previous);
}

/* released_ns() -> int: how long, in nanoseconds, calls of this module have let the GIL go since it was loaded (the
 * C work they released it around, without the waits to take it back): benchmarks/threads.py --gil-share reads the
 * share of a call under the GIL from it. */
static PyObject *fastcall_released_ns(PyObject *module, PyObject *unused) {
    (void)unused;
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    return state == NULL ? NULL : PyLong_FromLongLong(state->released_ns);
}

/* open_gil_share() -> float: the share of a large open that holds the GIL, as learned (open_releases). For
 * benchmarks/threads.py and the tests. */
static PyObject *fastcall_open_gil_share(PyObject *module, PyObject *unused) {
    (void)unused;
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    return state == NULL ? NULL : PyFloat_FromDouble(state->open_gil_share);
}

/* set_open_gil_share(share) -> the previous share: what the next large open's release is decided on (from 0 to 1;
 * each large open that makes a payload then moves it, learn_open_share). For the tests and benchmarks. */
static PyObject *fastcall_set_open_gil_share(PyObject *module, PyObject *value) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    if (state == NULL)
        return NULL;
    double share = PyFloat_AsDouble(value);
    if (share == -1.0 && PyErr_Occurred())
        return NULL;
    if (!(share >= 0.0 && share <= 1.0)) { /* (NaN too) */
        PyErr_SetString(PyExc_ValueError, "set_open_gil_share: share must be from 0 to 1");
        return NULL;
    }
    double previous = state->open_gil_share;
    state->open_gil_share = share;
    return PyFloat_FromDouble(previous);
}

/* stringify(payload) -> bytes | None: JSON.stringify's text of payload (stringify.c), or None when that writer
 * declines it (the caller then takes the general path). */
static PyObject *fastcall_stringify(PyObject *module, PyObject *payload) {
    fastcall_state *state = state_of(module);
    if (state == NULL)
        return NULL;
    char first[2048]; /* most payloads fit: no heap block for them */
    stringify_writer writer;
    pasarela_stringify_start(&writer, state->utf8_of, first, sizeof first, 1);
    int rc = pasarela_stringify_dict(&writer, payload);
    PyObject *text = rc == STRINGIFY_DONE ? bytes_at(writer.w.out, writer.w.len) : NULL;
    PyMem_Free(writer.w.heap);
    if (rc == STRINGIFY_DECLINED)
        Py_RETURN_NONE;
    return text;
}

/* stringify_into(payloads, start, stop, out, cap, lens) -> int: the texts of payloads[start:stop] (a list), back
 * to back at the address out (cap bytes), their lengths at the address lens (size_t each); returns the bytes
 * written, -1 when the writer declines one of them, -2 when they may not fit in cap bytes (the writer asks for
 * room a token at a time, up to 48 bytes more than the token takes: then grow the buffer and call again). */
static PyObject *fastcall_stringify_into(PyObject *module, call_args args, Py_ssize_t nargs) {
    fastcall_state *state = state_of(module);
    if (state == NULL || check_arity(nargs, 6, "stringify_into") < 0)
        return NULL;
    PyObject *payloads = args[0];
    if (!PyList_Check(payloads)) {
        PyErr_SetString(PyExc_TypeError, "stringify_into: payloads must be a list");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    size_t cap = PyLong_AsSize_t(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (start < 0 || stop < start || stop > PyList_Size(payloads)) {
        PyErr_SetString(PyExc_ValueError, "stringify_into: start and stop must be within payloads, in order");
        return NULL;
    }
    char *out = (char *)address_of(args[3], "stringify_into", "out");
    size_t *lens = out == NULL ? NULL : (size_t *)address_of(args[5], "stringify_into", "lens");
    if (lens == NULL)
        return NULL;
    stringify_writer writer; /* one for all of them: the keys they share are read once */
    pasarela_stringify_start(&writer, state->utf8_of, out, cap, 0);
    for (Py_ssize_t i = start; i < stop; i++) {
        size_t before = writer.w.len;
        int rc = pasarela_stringify_dict(&writer, PyList_GetItem(payloads, i));
        if (rc == STRINGIFY_ERROR)
            return NULL;
        if (rc != STRINGIFY_DONE)
            return PyLong_FromLong(rc == STRINGIFY_FULL ? -2 : -1);
        lens[i - start] = writer.w.len - before;
    }
    return PyLong_FromSize_t(writer.w.len);
}

/* parse(text) -> value | text: the value of the JSON text (bytes) as orjson.loads returns it (parse.c), or text
 * itself (which no value is) when that reader declines it. The reader of open_post, on its own: for the tests. */
static PyObject *fastcall_parse(PyObject *module, PyObject *text) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    if (state == NULL)
        return NULL;
    Py_ssize_t len;
    const char *bytes = bytes_of(text, &len, "parse: text");
    if (bytes == NULL)
        return NULL;
    PyObject *value = pasarela_parse_json(bytes, (size_t)len, &state->keys);
    if (value == NULL && !PyErr_Occurred()) {
        Py_INCREF(text);
        return text;
    }
    return value;
}

/* parse_canonical(text): the value of a text the reader confirms canonical (pasarela_parse_canonical_json), or
 * None. For the tests, which hold it to JSON.stringify's own reading. */
static PyObject *fastcall_parse_canonical(PyObject *module, PyObject *text) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    if (state == NULL)
        return NULL;
    Py_ssize_t len;
    const char *bytes = bytes_of(text, &len, "parse_canonical: text");
    if (bytes == NULL)
        return NULL;
    int confirmed = 0;
    PyObject *value = pasarela_parse_canonical_json(bytes, (size_t)len, &state->keys, &confirmed);
    if (value != NULL && !confirmed)
        Py_CLEAR(value);
    if (value == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return value;
}

/* counts() -> (seal_payload calls by method, open_post and open_post_bytes calls, seal samples, open samples): the
 * finished calls counted since set_counting(True) (a tuple of four, by the index of the method in COUNT_METHODS, and
 * an int), and the samples taken since the last counts() (lists of (nanoseconds, label)), which it takes. */
static PyObject *fastcall_counts(PyObject *module, PyObject *unused) {
    (void)unused;
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    if (state == NULL)
        return NULL;
    PyObject *seals[COUNT_LABELS];
    for (int label = 0; label < COUNT_LABELS; label++)
        seals[label] = PyLong_FromUnsignedLongLong(state->counts[0].calls[label]);
    PyObject *items[4] = {tuple_of(COUNT_LABELS, seals), PyLong_FromUnsignedLongLong(state->counts[1].calls[0]),
                          NULL, NULL};
    for (int kind = 0; kind < 2; kind++) {
        call_counts *counts = &state->counts[kind];
        int n = counts->n_samples; /* (making objects may run a finalizer that seals: a sample it adds is dropped) */
        items[2 + kind] = PyList_New(n);
        for (int i = 0; items[2 + kind] != NULL && i < n; i++) {
            PyObject *pair[2] = {PyLong_FromLongLong(counts->samples[i]), PyLong_FromLong(counts->labels[i])};
            PyObject *sample = tuple_of(2, pair);
            if (sample == NULL || PyList_SetItem(items[2 + kind], i, sample) < 0)
                Py_CLEAR(items[2 + kind]);
        }
    }
    PyObject *result = tuple_of(4, items);
    if (result != NULL)
        state->counts[0].n_samples = state->counts[1].n_samples = 0; /* taken */
    return result;
}

/* set_counting(on) -> None: whether seal_payload, open_post and open_post_bytes count their finished calls
 * (counting.h; pasarela._telemetry, once, when pasarela[otel] is in use; benchmarks/otel_overhead.py). */
static PyObject *fastcall_set_counting(PyObject *module, PyObject *on) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
    int value = PyObject_IsTrue(on);
    if (state == NULL || value < 0)
        return NULL;
    state->counting = value;
    Py_RETURN_NONE;
}

static PyMethodDef fastcall_methods[] = {
    {"connect", (PyCFunction)(void (*)(void))fastcall_connect, METH_FASTCALL,
     "connect(seal_json_address, open_request_address, layout, utf8_address, seal_batch_address, "
     "open_request_as_sent_address, canonicalize_address, workspace)"},
    {"seal_json", (PyCFunction)(void (*)(void))fastcall_seal_json, METH_FASTCALL,
     "seal_json(credentials, ws, timestamp, json, flags, iv, row_type, head, check_facts) -> row | (row, facts) | "
     "status"},
    {"seal_payload", (PyCFunction)(void (*)(void))fastcall_seal_payload, METH_FASTCALL,
     "seal_payload(credentials, timestamp, payload, iv, row_type, head) -> row | None | status"},
    {"open_post", (PyCFunction)(void (*)(void))fastcall_open_post, METH_FASTCALL,
     "open_post(credentials, headers, body, now, tolerance) -> payload | (plaintext, facts) | status | None"},
    {"open_post_bytes", (PyCFunction)(void (*)(void))fastcall_open_post_bytes, METH_FASTCALL,
     "open_post_bytes(credentials, headers, body, now, tolerance) -> plaintext | status | None"},
    {"rows", (PyCFunction)(void (*)(void))fastcall_rows, METH_FASTCALL,
     "rows(row_type, column, column_start, common, out, out_lens, plaintext_lens, n, buffer_bytes, "
     "shared_request_bytes) -> list"},
    {"seal_rows", (PyCFunction)(void (*)(void))fastcall_seal_rows, METH_FASTCALL,
     "seal_rows(row_type, column, column_start, common, credentials, ws, timestamp, plaintexts, lens, n, statuses) "
     "-> list"},
    {"parse", fastcall_parse, METH_O, "parse(text) -> value | text"},
    {"counts", fastcall_counts, METH_NOARGS,
     "counts() -> (seal_payload calls by method, open_post calls, seal samples, open samples): lists of (ns, label)"},
    {"set_counting", fastcall_set_counting, METH_O, "set_counting(on) -> None"},
    {"seal_json_batch", (PyCFunction)(void (*)(void))fastcall_seal_json_batch, METH_FASTCALL,
     "seal_json_batch(credentials, timestamp, json, json_offset, json_lens, start, n, json_flags, ws, statuses, "
     "plaintext_lens, out_lens, facts, facts_mask) -> (done, first_exception)"},
    {"set_gil_release_bytes", fastcall_set_gil_release_bytes, METH_O, "set_gil_release_bytes(n) -> previous n"},
    {"open_gil_share", fastcall_open_gil_share, METH_NOARGS, "open_gil_share() -> float"},
    {"released_ns", fastcall_released_ns, METH_NOARGS, "released_ns() -> int"},
    {"set_open_gil_share", fastcall_set_open_gil_share, METH_O, "set_open_gil_share(share) -> previous share"},
    {"parse_canonical", fastcall_parse_canonical, METH_O, "parse_canonical(text) -> value | None"},
    {"stringify", fastcall_stringify, METH_O, "stringify(payload) -> bytes | None"},
    {"stringify_into", (PyCFunction)(void (*)(void))fastcall_stringify_into, METH_FASTCALL,
     "stringify_into(payloads, start, stop, out, cap, lens) -> int"},
    {NULL, NULL, 0, NULL},
};

static void fastcall_free(void *module) {
    fastcall_state *state = (fastcall_state *)PyModule_GetState((PyObject *)module);
    if (state == NULL)
        return;
    for (int i = 0; i < 3; i++)
        Py_CLEAR(state->header_names[i]);
    Py_CLEAR(state->get);
    Py_CLEAR(state->workspace);
    Py_CLEAR(state->buffers_name);
    Py_CLEAR(state->ws_address_name);
    for (int i = 0; i < COUNT_LABELS; i++)
        Py_CLEAR(state->methods[i]);
    pasarela_parse_keys_clear(&state->keys);
}

static struct PyModuleDef fastcall_module = {
    PyModuleDef_HEAD_INIT, "pasarela._fastcall",
    "CPython entry points for pasarela_seal_json, pasarela_open_request, a batch's requests, the writer of payloads' "
    "text and the reader of opened payloads (private to pasarela._binding).",
    (Py_ssize_t)sizeof(fastcall_state), fastcall_methods, NULL, NULL, NULL, fastcall_free,
};

PyMODINIT_FUNC PyInit__fastcall(void) {
    PyObject *module = PyModule_Create(&fastcall_module);
    if (module != NULL) {
        fastcall_state *state = (fastcall_state *)PyModule_GetState(module);
        state->seal_json = NULL;
        state->open_request = NULL;
        state->open_request_as_sent = NULL;
        state->canonicalize = NULL;
        state->seal_batch = NULL;
        state->seal_json_batch = NULL;
        state->utf8_of = NULL;
        state->workspace = NULL;
        state->release_bytes = RELEASE_BYTES;
        state->open_gil_share = 0.0;
        state->released_ns = 0;
        static const char *const names[3] = {"timestamp", "Authorization", "authorization"};
        int made = 1;
        for (int i = 0; i < 3; i++)
            made &= (state->header_names[i] = PyUnicode_InternFromString(names[i])) != NULL;
        made &= (state->get = PyUnicode_InternFromString("get")) != NULL;
        made &= (state->buffers_name = PyUnicode_InternFromString("buffers")) != NULL;
        made &= (state->ws_address_name = PyUnicode_InternFromString("ws_address")) != NULL;
        static const char *const methods[COUNT_LABELS] = COUNT_METHODS;
        for (int i = 0; i < COUNT_LABELS; i++)
            made &= (state->methods[i] = PyUnicode_InternFromString(methods[i])) != NULL;
        if (!made)
            Py_CLEAR(module); /* fastcall_free releases the names made */
    }
    return module;
}
