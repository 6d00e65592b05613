#define _GNU_SOURCE
#include "CPOSIX.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int cposix_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int cposix_accept(int listener) {
  return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int cposix_pipe(int descriptors[2]) { return pipe2(descriptors, O_CLOEXEC); }

int cposix_name_thread(pthread_t thread, const char *name) {
  return pthread_setname_np(thread, name);
}

int cposix_current_thread_id(void) { return (int)syscall(SYS_gettid); }

const char *cposix_errno_name(int number) { return strerrorname_np(number); }

void cposix_errno_message(int number, char *buffer, size_t capacity) {
  if (capacity == 0) return;
  // The GNU strerror_r may return a static string instead of filling the buffer.
  const char *message = strerror_r(number, buffer, capacity);
  if (message != buffer) {
    strncpy(buffer, message, capacity - 1);
    buffer[capacity - 1] = '\0';
  }
}
