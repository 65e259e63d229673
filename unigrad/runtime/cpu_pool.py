"""A pool of worker threads for CPU kernels with a THREAD axis: one dispatch runs `threads` chunks.

The pool is a small C library (compiled once, cached like kernels): pool_run(entry, bufs, vars, n) runs
entry(bufs, vars, core) for core in [0, n) on the workers and the calling thread, and returns when all are
done. Each thread owns a contiguous share of the chunks and runs it first, so it sees the same part of a buffer
in every kernel (as OpenMP's static schedule does); then it takes what is left of the others' shares, so a thread
the VM delays does not hold the job up. ctypes releases the GIL for the call; a second Python thread calling
pool_run meanwhile waits for the running job to finish (the pool holds one job at a time). THREADS=1 (or a 1-core machine)
never starts it. An idle worker polls for the next job for POOL_SPIN_US before it sleeps: kernels usually come
back to back, and waking a sleeping thread costs tens of microseconds, more under a VM.
"""

from __future__ import annotations

import ctypes
import functools
import os

from unigrad import config

POOL_SRC = r"""
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
typedef void (*entry_t)(void **bufs, long long *vars, long long core);
#define MAXT 256
static pthread_t workers[MAXT];
static int n_workers = 0;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;  /* one job at a time: callers on other threads wait */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static entry_t job_fn;
static void **job_bufs;
static long long *job_vars;
static atomic_llong generation = 0;
static atomic_llong done_chunks;
static atomic_int busy = 0;  /* workers inside run_chunks: the job's fields stay put until it is 0 */
static long long spin_ns = 0;
static atomic_llong wake = 0;  /* bumped by pool_wake: sleeping workers start polling again */

void pool_spin(long long ns) { spin_ns = ns; }

/* Wake the sleeping workers to poll for spin_ns (a realize about to launch kernels calls it before it schedules,
   so the wake-up of tens of microseconds overlaps the scheduling instead of delaying the first threaded kernel). */
void pool_wake(void) {
  pthread_mutex_lock(&mu);
  atomic_fetch_add(&wake, 1);
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000ll + t.tv_nsec;
}

/* Each thread first runs the chunks of its own slot, a contiguous share, in order: the same thread gets the
   same part of a buffer in every kernel, so data a kernel leaves in a core's caches is there for the next one.
   Then it takes what is left of the other slots (a thread the VM delays does not hold the job up). */
struct slot { atomic_llong next; long long end; char pad[48]; };
static struct slot slots[MAXT + 1];
static int job_slots;

static void run_chunks(int self) {
  for (int k = 0; k < job_slots; k++) {
    struct slot *s = &slots[(self + k) % job_slots];
    long long i;
    while ((i = atomic_fetch_add(&s->next, 1)) < s->end) {
      job_fn(job_bufs, job_vars, i);
      atomic_fetch_add(&done_chunks, 1);
    }
  }
}

/* After a job a worker polls for the next one for spin_ns (kernels come back to back, and waking a
   sleeping thread costs tens of microseconds), then sleeps on the condition variable. */
static void *worker(void *arg) {
  long long seen = 0;
  int self = (int)(long long)arg;
  for (;;) {
    long long woken = atomic_load(&wake);
    long long until = now_ns() + spin_ns;
    for (int k = 1; atomic_load(&generation) == seen; k++) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      if ((k & 255) == 0 && now_ns() > until) break;
    }
    pthread_mutex_lock(&mu);
    while (atomic_load(&generation) == seen && atomic_load(&wake) == woken) pthread_cond_wait(&cv, &mu);
    if (atomic_load(&generation) == seen) {  /* woken by pool_wake: poll again */
      pthread_mutex_unlock(&mu);
      continue;
    }
    seen = atomic_load(&generation);
    atomic_fetch_add(&busy, 1);
    pthread_mutex_unlock(&mu);
    run_chunks(self);
    atomic_fetch_sub(&busy, 1);
  }
  return 0;
}

int pool_start(int n) {
  while (n_workers < n && n_workers < MAXT) {
    if (pthread_create(&workers[n_workers], 0, worker, (void *)(long long)(n_workers + 1)) != 0) break;
    n_workers++;
  }
  return n_workers;
}

void pool_run(entry_t fn, void **bufs, long long *vars, long long n) {
  pthread_mutex_lock(&run_mu);
  pthread_mutex_lock(&mu);
  /* a worker that joined the last job late may still be looking at its fields */
  while (atomic_load(&busy) > 0) {
    pthread_mutex_unlock(&mu);
    sched_yield();
    pthread_mutex_lock(&mu);
  }
  job_fn = fn; job_bufs = bufs; job_vars = vars;
  job_slots = n < n_workers + 1 ? (int)n : n_workers + 1;
  for (int k = 0; k < job_slots; k++) {
    atomic_store(&slots[k].next, n * k / job_slots);
    slots[k].end = n * (k + 1) / job_slots;
  }
  atomic_store(&done_chunks, 0);
  atomic_fetch_add(&generation, 1);
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  run_chunks(0);
  while (atomic_load(&done_chunks) < n) sched_yield();
  pthread_mutex_unlock(&run_mu);
}
"""


def n_threads() -> int:
    """Threads a kernel may use: THREADS, or one per core the process may run on (asked on every kernel
    lookup, so the core count is read from the OS once)."""
    if config.THREADS.value:
        return max(1, int(config.THREADS.value))
    return _cores()


@functools.cache
def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@functools.cache
def pool(threads: int) -> ctypes.CDLL:
    """The pool library with threads-1 workers started (the caller's thread is the last worker)."""
    from unigrad.runtime.ops_cpu import CCompiler

    lib = ctypes.CDLL(str(CCompiler().compile_to_path(POOL_SRC)))
    lib.pool_start.argtypes = [ctypes.c_int]
    lib.pool_start.restype = ctypes.c_int
    lib.pool_run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
    lib.pool_run.restype = None
    lib.pool_spin.argtypes = [ctypes.c_longlong]
    lib.pool_wake.argtypes, lib.pool_wake.restype = [], None
    lib.pool_spin(max(0, int(config.POOL_SPIN_US.value)) * 1000)
    lib.pool_start(threads - 1)
    _started.append(lib)
    return lib


_started: list[ctypes.CDLL] = []  # the pools started (one per thread count asked for)


def wake() -> None:
    """Have the started pools' sleeping workers poll for the next kernel (POOL_SPIN_US) from now: a realize calls
    it before scheduling, so a threaded kernel after a long stretch of Python (a training step's graph building)
    does not wait tens of microseconds for its workers (an MLP step's first matmul: 58 -> ~10 us)."""
    for lib in _started:
        lib.pool_wake()
