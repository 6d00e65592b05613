#ifndef CSERVERSHIMS_H
#define CSERVERSHIMS_H

// What the gpsd-compatible server needs from libc that Glibc's Swift module does not export
// (declared only under _GNU_SOURCE or in headers it leaves out).

/// A non-blocking, close-on-exec eventfd, or -1 with errno set.
int cserver_eventfd(void);

/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC, so a client socket never leaks into a child
/// process; -1 with errno set.
int cserver_accept(int listener);

/// Names the calling thread (shown by top -H and in /proc/self/task/*/comm).
void cserver_name_thread(const char *name);

#endif
