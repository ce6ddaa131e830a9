#ifndef IAPCHECK_CAFFINITY_H
#define IAPCHECK_CAFFINITY_H

/// The number of CPUs the calling thread may run on (its affinity mask, which `taskset` narrows for a process),
/// or -1 where it cannot be read (not Linux, or the call failed).
int iapcheck_usable_cpus(void);

/// Restricts the calling thread to the first CPU it may run on now, as `taskset -c N` does for a process; returns 0
/// on success, -1 otherwise. For tests of the above.
int iapcheck_pin_thread_to_one_cpu(void);

#endif
