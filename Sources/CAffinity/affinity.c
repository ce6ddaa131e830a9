// sched_getaffinity and the CPU_* macros are GNU extensions, which Swift's Glibc module does not expose.
#ifdef __linux__
#define _GNU_SOURCE
#include <sched.h>
#endif

#include "CAffinity.h"

int iapcheck_usable_cpus(void) {
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    return CPU_COUNT(&set);
#else
    return -1;
#endif
}

int iapcheck_pin_thread_to_one_cpu(void) {
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            return sched_setaffinity(0, sizeof one, &one) == 0 ? 0 : -1;
        }
    }
    return -1;
#else
    return -1;
#endif
}
