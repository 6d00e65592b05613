#define _GNU_SOURCE
#include "CServerShims.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

int cserver_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int cserver_accept(int listener) {
  return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

void cserver_name_thread(const char *name) { (void)pthread_setname_np(pthread_self(), name); }
