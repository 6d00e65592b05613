#ifndef SERIALGPS_CUDEV_SHIM_H
#define SERIALGPS_CUDEV_SHIM_H
#include <libudev.h>
#include <pthread.h>
// The discovery thread wakes from poll(2) on an eventfd; Glibc's Swift module does not
// export <sys/eventfd.h>, so it comes in through this module.
#include <sys/eventfd.h>

// glibc declares pthread_setname_np only under _GNU_SOURCE, which the Glibc module is not
// built with; the function itself is always there.
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread (at most 15 bytes), so that it shows in `ps -L` and /proc.
static inline void cudev_name_current_thread(const char *name) {
  (void)pthread_setname_np(pthread_self(), name);
}
#endif
