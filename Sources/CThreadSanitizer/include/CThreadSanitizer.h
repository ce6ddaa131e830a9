#ifndef IAPCHECK_CTHREADSANITIZER_H
#define IAPCHECK_CTHREADSANITIZER_H

/// ThreadSanitizer's annotations of a lock it cannot see (its runtime defines them). Swift's `Mutex` waits on a futex
/// from a library built without the sanitizer, so a ThreadSanitizer build takes every access under it for a race;
/// `Locked` calls these around its critical section only when built with `-DIAPCHECK_TSAN` (as .ci/run builds the
/// loopback probe under the sanitizer), never in a normal build, where nothing links them.
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);

#endif
