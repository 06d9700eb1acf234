/* clock.h: a monotonic clock in nanoseconds (only differences mean anything), for the GIL's release time and
 * OpenTelemetry's duration samples (counting.h). Private to pasarela._fastcall. */
#ifndef PASARELA_CPYTHON_CLOCK_H
#define PASARELA_CPYTHON_CLOCK_H

#include <time.h>
#if defined(_WIN32)
#include <windows.h> /* QueryPerformanceCounter */
#endif

static inline long long monotonic_ns(void) {
#if defined(_WIN32)
    LARGE_INTEGER now, frequency;
    QueryPerformanceCounter(&now);
    QueryPerformanceFrequency(&frequency);
    return (long long)((double)now.QuadPart * 1e9 / (double)frequency.QuadPart);
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
#endif
}

#endif
