/* counting.h: pasarela._telemetry's counts of the fast paths' finished calls (issue 40, issue 54), kept where the
 * calls end, under the GIL. Private to pasarela._fastcall.
 *
 * Terminal.seal of a dict, and Terminal.open and Terminal.open_bytes of a POST's bytes, end in one C call
 * (seal_payload, open_post, open_post_bytes) when it makes their result; one more Python-level call to count them
 * would be a measurable share of a small seal (docs/performance.md, "What OpenTelemetry costs"), so that call
 * counts itself: counting_start when it begins, counting_end when it made the result. A call that ends any other
 * way (a status, a writer that declines, an exception) is not counted here: Terminal then takes its slower way,
 * which pasarela.terminal.counting counts. Installed once (set_counting(True), by pasarela._telemetry when
 * pasarela[otel] is in use); off, each call tests one int. The first call and one in COUNT_SAMPLE_EVERY after it is
 * timed, into samples (at most COUNT_SAMPLES until counts() takes them), each with a label: the index of a seal's
 * method in COUNT_METHODS (pasarela._telemetry.METHODS), 0 for an open. */
#ifndef PASARELA_CPYTHON_COUNTING_H
#define PASARELA_CPYTHON_COUNTING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "clock.h"

#define COUNT_SAMPLE_EVERY 64
#define COUNT_SAMPLES 256
#define COUNT_LABELS 4 /* the methods a seal may have: COUNT_METHODS */
#define COUNT_METHODS {"GET", "POST", "PUT", "PATCH"}

typedef struct {
    unsigned long long calls[COUNT_LABELS]; /* finished calls, by label */
    unsigned long long sampled;             /* calls begun while counting: one in COUNT_SAMPLE_EVERY is timed */
    long long samples[COUNT_SAMPLES];       /* nanoseconds */
    int labels[COUNT_SAMPLES];
    int n_samples;
} call_counts;

/* A call begins: the clock when it is to be timed (counting_end), else 0. */
static inline long long counting_start(int counting, call_counts *counts) {
    if (!counting)
        return 0;
    return counts->sampled++ % COUNT_SAMPLE_EVERY == 0 ? monotonic_ns() : 0;
}

/* A call made its result: counted under label (0 <= label < COUNT_LABELS), and its duration kept when it was
 * timed (start: counting_start's clock). */
static inline void counting_end(int counting, call_counts *counts, long long start, int label) {
    if (!counting)
        return;
    counts->calls[label]++;
    if (start != 0 && counts->n_samples < COUNT_SAMPLES) {
        counts->labels[counts->n_samples] = label;
        counts->samples[counts->n_samples++] = monotonic_ns() - start;
    }
}

/* The label of a seal's method, head[1] (seal_payload's head: (terminal, method), the method checked and upper
 * case): its index in methods (COUNT_METHODS, interned), compared by identity first (the default "POST" is the
 * interned one); 1 (POST) when it is none of them. */
static inline int method_label(PyObject *const *methods, PyObject *head) {
    PyObject *method = PyTuple_Check(head) && PyTuple_Size(head) > 1 ? PyTuple_GetItem(head, 1) : NULL;
    if (method == NULL) {
        PyErr_Clear();
        return 1;
    }
    for (int i = 0; i < COUNT_LABELS; i++)
        if (method == methods[i])
            return i;
    for (int i = 0; PyUnicode_Check(method) && i < COUNT_LABELS; i++)
        if (PyUnicode_Compare(method, methods[i]) == 0)
            return i;
    PyErr_Clear();
    return 1;
}

#endif
