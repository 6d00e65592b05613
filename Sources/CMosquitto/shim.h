#ifndef SERIALGPS_CMOSQUITTO_SHIM_H
#define SERIALGPS_CMOSQUITTO_SHIM_H
// libmosquitto (Debian libmosquitto-dev): the MQTT client the fleet bridge speaks through.
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <pthread.h>
// The MQTT thread waits in epoll(7) on its clients' sockets and an eventfd; Glibc's Swift
// module exports neither <sys/epoll.h> nor <sys/eventfd.h>, so they come in through this
// module (as eventfd does in CUdev) until the shared system layer has them.
#include <sys/epoll.h>
#include <sys/eventfd.h>

// glibc declares pthread_setname_np only under _GNU_SOURCE.
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread (at most 15 bytes), so that it shows in `ps -L` and /proc.
static inline void cmosquitto_name_current_thread(const char *name) {
  (void)pthread_setname_np(pthread_self(), name);
}
#endif
